#include "pipeline/passes/transaction_step.hpp"

#include "pipeline/passes/attempt_executor.hpp"

namespace exo {

void take_carried_dead_letters(Batch& batch) {
    for (auto& record : batch) {
        if (!record.is_pending() || !record.pending.dead_letter) continue;
        // Already judged in an earlier try; only its dead-letter step failed.
        record.resume_dead_letter();
        // Nothing behind it runs before it is recorded: a stalled dead letter
        // stops its lane, it does not just hold back the offsets.
        batch.hold_behind(record);
    }
}

void run_transactions(const PassContext& ctx, Batch& batch,
                      const std::function<pqxx::connection&()>& connection) {
    const auto run = [&](const TransactionRecords& records) {
        if (!records.empty()) run_ladder(ctx, connection(), batch, records);
    };
    // Records run in partition order: a record that must run alone ends the
    // transaction's records before it, runs, and new ones start after it.
    TransactionRecords records;
    for (auto& record : batch) {
        if (!record.is_pending()) continue;
        if (!record.pending.solo) {
            records.push_back(&record);
            continue;
        }
        run(records);
        records.clear();
        run({&record});
    }
    run(records);
}

void TransactionStep::run(Batch& batch) {
    take_carried_dead_letters(batch);
    run_transactions(ctx_, batch, [this]() -> pqxx::connection& { return postgres_.connection(); });
}

}  // namespace exo
