#include "scheduling/pause_policy.hpp"

namespace exo {

PauseLimits PauseLimits::of(const PipelineConfig& pipeline) {
    const auto records = static_cast<std::size_t>(pipeline.max_queued_per_partition);
    return {records, pipeline.max_queued_bytes_per_partition, records * kSpilledPerQueued,
            static_cast<std::size_t>(pipeline.max_in_flight), pipeline.max_in_flight_bytes};
}

PausePolicy::Changes PausePolicy::update(std::size_t total_records, std::size_t total_bytes,
                                         const std::map<TopicPartition, PartitionLoad>& loads) {
    const auto& l = limits_;
    if (total_records >= l.total_records || total_bytes >= l.total_bytes) over_total_ = true;
    if (total_records <= l.total_records / 2 && total_bytes <= l.total_bytes / 2)
        over_total_ = false;
    Changes changes;
    for (const auto& [tp, load] : loads) {
        const bool over = load.records >= l.records || load.bytes >= l.bytes ||
                          load.spilled_held >= l.spilled || over_total_;
        const bool under = load.records <= l.records / 2 && load.bytes <= l.bytes / 2 &&
                           load.spilled_held <= l.spilled / 2 && !over_total_;
        const bool was_paused = paused(tp);
        if (!was_paused && over) {
            changes.pause.push_back(tp);
            paused_.insert(tp);
        }
        if (was_paused && under) {
            changes.resume.push_back(tp);
            paused_.erase(tp);
        }
    }
    return changes;
}

}  // namespace exo
