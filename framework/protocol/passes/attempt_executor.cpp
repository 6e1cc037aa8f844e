#include "protocol/passes/attempt_executor.hpp"

#include "core/text.hpp"
#include "protocol/passes/careful_pass.hpp"
#include "protocol/passes/optimistic_pass.hpp"

namespace exo {

PassResult AttemptExecutor::run(Rung rung, const TransactionRecords& records) {
    // The records this attempt decides about; those decided before it (a
    // record a batch handler named, the records held behind it) keep their fate.
    TransactionRecords ran;
    for (auto* record : records)
        if (record->is_pending()) ran.push_back(record);
    if (rung == Rung::optimistic && ran.empty()) return PassResult::done();
    auto result = rung == Rung::optimistic ? run_optimistic_pass(ctx_, connection_, batch_, records)
                                           : run_careful_pass(ctx_, connection_, batch_, records);
    result.rung = rung;
    result.ran = std::move(ran);
    return result;
}

void AttemptExecutor::settle(const Plan& plan, const PassResult& result,
                             const TransactionRecords& records) {
    if (plan.forget)
        for (auto* record : result.ran) record->reset_to_pending();
    // Whichever way the attempt ended: the others committed without them, or
    // run again without them.
    if (plan.nack_held)
        for (const auto& held : result.entity_held)
            ctx_.fate.record_failed(batch_, *held.record, held.failure, held.why);
    if (plan.fail_outside)
        for (const auto& failed : result.outside_failed)
            ctx_.fate.record_failed(batch_, *failed.record, failed.failure, failed.why);
    if (plan.fail_named) {
        ctx_.stats.records_isolated++;
        ctx_.fate.record_failed(batch_, *result.named->record, result.named->failure,
                                result.named->why);
    }
    // The COMMIT failed (a deferred constraint, or the server rolled back) and
    // says nothing of which record caused it.
    if (plan.fail_commit)
        ctx_.fate.record_failed(batch_, *records.front(), Failure::retryable,
                                "COMMIT failed: " + result.why);
    if (plan.next != Rung::each_alone) return;
    // Each record that had run goes once more in a transaction of its own, so
    // the one that fails COMMIT fails alone and pays alone.
    ctx_.log.warn("COMMIT of {} records failed ({}); running each in its own transaction",
                  records.size(), printable_text(result.why));
    for (auto* record : records)
        if (record->is_finished() || std::holds_alternative<fate::Park>(record->fate())) {
            record->reset_to_pending();
            record->pending.solo = true;
        }
}

Attempted attempted(const PassResult& result, int exclusions, std::size_t records) {
    return {result.rung,
            result.committed,
            result.named.has_value(),
            !result.outside_failed.empty(),
            !result.entity_held.empty(),
            exclusions,
            records};
}

}  // namespace exo
