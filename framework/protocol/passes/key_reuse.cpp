#include "protocol/passes/key_reuse.hpp"

#include "core/log_context.hpp"

namespace exo {

void finish_postgres_duplicate(BatchRecord& record, ExistingRow row, PipelineStats& stats,
                               spdlog::logger& log) {
    const auto verdict = key_reuse_verdict(row.applied.fingerprint, record.fingerprint,
                                           record.binding->on_key_reuse);
    if (verdict == KeyReuse::dead_letter || verdict == KeyReuse::log) {
        const auto& r = record.pending.record;
        stats.key_reused(r.topic.value);
        record.note_key_reused();
        auto why = key_reuse_reason(record.fingerprint, row.applied);
        if (verdict == KeyReuse::dead_letter) {
            // No dedup row: the key has the applied copy's, which stays the answer.
            record.dead_letter(std::move(why), /*record_key=*/false);
            return;
        }
        LogContext log_context(r.topic, r.partition, r.offset, record.key, &record.pending.trace);
        log.warn("{}[{}]@{} (key '{}'): {}; finished as a duplicate (on_key_reuse: log)",
                 r.topic.value, r.partition.value, r.offset.value, record.key, why);
    }
    record.finish_duplicate(Outcome::duplicate_postgres, row.outcome, std::move(row.result),
                            std::move(row.applied.fingerprint));
}

}  // namespace exo
