#pragma once
// The transaction step (docs/design.md#transaction-retry-ladder): the batch's
// pending records in PostgreSQL transactions, in partition order, each
// transaction's records down the retry ladder (protocol/passes/retry_ladder.hpp: optimistic,
// optimistic without a record a batch handler names, careful, each record
// alone after a COMMIT that names none) by its executor
// (protocol/passes/attempt_executor.hpp).
// In either pass a record whose sequence entity another transaction holds
// locked is NACKed at once, with the records of its lane behind it, and the
// others go on in the same transaction.
//
// Thread-safety: none; the worker's thread only.
#include <functional>

#include "protocol/batch.hpp"
#include "protocol/passes/attempt_executor.hpp"
#include "protocol/passes/transaction_pass.hpp"
#include "protocol/session_access.hpp"

namespace exo {

// Records whose dead-letter verdict an earlier try took (only their dead-letter
// step failed) go straight to the dead-letter step, and the pending records of
// their lane behind them wait for the next batch. Done before anything of the
// batch runs: none of them runs handler code in this batch.
void take_carried_dead_letters(Batch& batch);

// Runs `records` (one transaction's) down the ladder, plan, execute, plan,
// until the planner says done: every record leaves with a fate. Throws what
// AttemptExecutor::run throws.
void run_ladder(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                const TransactionRecords& records);

// Every pending record of `batch` in PostgreSQL transactions, in partition
// order, each transaction's records down the ladder (run_ladder): a record that
// must run alone (pending.solo) ends the transaction's records before it, runs,
// and new ones start after it. `connection` is asked for only when a
// transaction runs. Throws what run_ladder throws.
void run_transactions(const PassContext& ctx, Batch& batch,
                      const std::function<pqxx::connection&()>& connection);

class TransactionStep {
public:
    TransactionStep(PassContext ctx, PostgresAccess& postgres) : ctx_(ctx), postgres_(postgres) {}

    // Leaves every pending record of the batch with a fate; a record whose
    // dead-letter verdict an earlier try took goes straight to the dead-letter
    // step. Throws what pauses the worker, and what fails the whole batch.
    void run(Batch& batch);

private:
    PassContext ctx_;
    PostgresAccess& postgres_;
};

}  // namespace exo
