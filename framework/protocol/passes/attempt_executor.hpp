#pragma once
// The executor of the retry ladder (retry_ladder.hpp): runs exactly one
// attempt over a transaction's records and returns how it ended as a value,
// and does what the planner's plan says with that value (forget a rolled-back
// attempt's verdicts, record the failures it names). run_ladder
// (protocol/steps/transaction_step.hpp) loops plan → execute → plan over it, for the daemon
// and the handler test kit (exo/testing.hpp) alike.
//
// Thread-safety: none; the worker's thread only.
#include <pqxx/connection>

#include "protocol/passes/retry_ladder.hpp"
#include "protocol/passes/transaction_pass.hpp"

namespace exo {

class AttemptExecutor {
public:
    // Every reference outlives the executor.
    AttemptExecutor(const PassContext& ctx, pqxx::connection& connection, Batch& batch)
        : ctx_(ctx), connection_(connection), batch_(batch) {}

    // Runs `rung` (optimistic or careful) over the pending ones of `records`;
    // an optimistic attempt with none left commits nothing and ends committed.
    // Throws what pauses the worker (pauses_the_worker), and a failure around
    // the records (a SAVEPOINT, a ROLLBACK TO), which fails the whole batch.
    PassResult run(Rung rung, const TransactionRecords& records);

    // Does what `plan` says about `result`, the attempt it was planned from,
    // before its next attempt: forgets, NACKs and fails records through the
    // fate policy. Before each_alone, every record of `records` the attempt
    // finished or parked goes back to pending to run alone (pending.solo).
    void settle(const Plan& plan, const PassResult& result, const TransactionRecords& records);

private:
    const PassContext& ctx_;
    pqxx::connection& connection_;
    Batch& batch_;
};

// What the planner needs of `result`: the attempt was planned with
// `exclusions` named records out of `records` records.
Attempted attempted(const PassResult& result, int exclusions, std::size_t records);

}  // namespace exo
