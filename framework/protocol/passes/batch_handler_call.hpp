#pragma once
// The batch-handler call of the optimistic pass (docs/design.md#transaction,
// "Batch handlers"): one handle_batch() over a run, the consecutive records of
// one binding whose framework SQL the set-based start already did. Their emits
// go to the transaction's outbox (written with every other record's at
// COMMIT), their results to their dedup rows in one statement.
#include <optional>
#include <string>

#include <pqxx/transaction_base>

#include <exo/batch_handler.hpp>
#include "protocol/batch.hpp"
#include "protocol/passes/transaction_pass.hpp"

namespace exo {

struct RunResult {
    // Every record of the run finished as applied. Otherwise the transaction
    // is to be rolled back, and `why` says why.
    bool applied = false;
    std::string why;
    // The handler named the record it failed on (BatchRecordFailed, or a result
    // PostgreSQL cannot store); unset when which record failed is unknown.
    std::optional<NamedFailure> named;

    static RunResult ran() { return {true, {}, std::nullopt}; }
    static RunResult failed(std::string why, std::optional<NamedFailure> named = std::nullopt) {
        return {false, std::move(why), std::move(named)};
    }
};

// Throws what pauses the worker (pauses_the_worker); every other failure is
// returned.
RunResult call_batch_handler(const PassContext& ctx, pqxx::transaction_base& tx,
                             BatchHandler& handler, const Run& run, TransactionOutbox& outbox);

}  // namespace exo
