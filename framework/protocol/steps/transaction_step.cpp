#include "protocol/steps/transaction_step.hpp"

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

void run_ladder(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                const TransactionRecords& records) {
    if (records.empty()) return;
    for (auto* record : records) record->in_transaction = true;
    AttemptExecutor executor(ctx, connection, batch);
    auto plan = first_attempt(records.size(), records.front()->pending.solo);
    while (plan.next == Rung::optimistic || plan.next == Rung::careful) {
        const auto result = executor.run(plan.next, records);
        plan = next_attempt(attempted(result, plan.exclusions, records.size()));
        executor.settle(plan, result, records);
    }
    if (plan.next != Rung::each_alone) return;
    // Pending at its turn: one alone before it may have held it behind itself.
    for (auto* record : records)
        if (record->is_pending()) run_ladder(ctx, connection, batch, {record});
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
