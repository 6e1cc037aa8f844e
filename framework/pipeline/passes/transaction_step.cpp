#include "pipeline/passes/transaction_step.hpp"

#include "core/text.hpp"
#include "pipeline/passes/careful_pass.hpp"
#include "pipeline/passes/optimistic_pass.hpp"

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

void TransactionStep::run(Batch& batch) {
    take_carried_dead_letters(batch);
    // Records run in partition order: a record that must run alone ends the
    // transaction's records before it, runs, and new ones start after it.
    TransactionRecords records;
    for (auto& record : batch) {
        if (!record.is_pending()) continue;
        if (!record.pending.solo) {
            records.push_back(&record);
            continue;
        }
        run_records(batch, records);
        records.clear();
        run_records(batch, {&record});
    }
    run_records(batch, records);
}

void TransactionStep::run_records(Batch& batch, const TransactionRecords& records) {
    if (records.empty()) return;
    for (auto* record : records) record->in_transaction = true;
    // Records rarely fail, so they first run without savepoints; if one fails,
    // everything is rolled back and they run again with a savepoint per
    // record, where the failure rolls back alone. (handle() then runs twice for
    // the records before it: HandlerContext::rerun() says so.) A record alone
    // after a failed COMMIT runs carefully at once.
    const bool solo = records.size() == 1 && records.front()->pending.solo;
    // A batch handler that names its bad record (BatchRecordFailed) costs one
    // more optimistic pass without it, not a savepoint per record. Bounded: a
    // handler that keeps naming records goes careful.
    for (int exclusions = 0; !solo; ++exclusions) {
        // The records this pass decides about; those decided before it (a
        // record a batch handler named, the records held behind it) keep their fate.
        TransactionRecords live;
        for (auto* record : records)
            if (record->is_pending()) live.push_back(record);
        if (live.empty()) return;
        const auto pass = run_optimistic_pass(ctx_, postgres_.connection(), batch, records);
        if (!pass.committed)
            for (auto* record : live) record->reset_to_pending();
        // Records whose entity another transaction holds: NACKed, the records
        // of their lanes behind them with them, whichever way the pass ended;
        // the others committed without them, or run again without them.
        for (const auto& held : pass.entity_held)
            ctx_.fate.record_failed(batch, *held.record, held.failure, held.why);
        if (pass.committed) return;
        if (!pass.outside_failed.empty()) {
            // Failed before BEGIN, taken out together: no exclusion of a handler's.
            for (const auto& failed : pass.outside_failed)
                ctx_.fate.record_failed(batch, *failed.record, failed.failure, failed.why);
            --exclusions;
            continue;
        }
        if (!pass.named || exclusions == kMaxExclusions) break;
        ctx_.stats.records_isolated++;
        ctx_.fate.record_failed(batch, *pass.named->record, pass.named->failure, pass.named->why);
    }
    const auto careful = run_careful_pass(ctx_, postgres_.connection(), batch, records);
    if (careful.committed) return;

    // The COMMIT failed (a deferred constraint, or the server rolled back) and
    // says nothing of which record caused it.
    if (records.size() == 1) {
        auto& record = *records.front();
        record.reset_to_pending();
        ctx_.fate.record_failed(batch, record, Failure::retryable, "COMMIT failed: " + careful.why);
        return;
    }
    // Each record that had run goes once more in a transaction of its own, so
    // the one that fails COMMIT fails alone and pays alone.
    ctx_.log.warn("COMMIT of {} records failed ({}); running each in its own transaction",
                  records.size(), printable_text(careful.why));
    for (auto* record : records)
        if (record->is_finished() || std::holds_alternative<fate::Park>(record->fate())) {
            record->reset_to_pending();
            record->pending.solo = true;
        }
    for (auto* record : records)
        if (record->is_pending()) run_records(batch, {record});
}

}  // namespace exo
