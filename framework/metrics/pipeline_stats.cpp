#include "metrics/pipeline_stats.hpp"

#include <fmt/format.h>

namespace exo {

PipelineStats::PipelineStats(const std::vector<std::string>& topics) {
    for (const auto& t : topics) topics_.emplace(t, std::make_unique<TopicStats>());
    other_ = topics_.emplace("", std::make_unique<TopicStats>()).first->second.get();
}

TopicStats& PipelineStats::topic_stats(const std::string& topic) {
    auto it = topics_.find(topic);
    return it == topics_.end() ? *other_ : *it->second;
}

void PipelineStats::record_finished(const std::string& topic, Outcome outcome,
                                    std::chrono::microseconds since_poll,
                                    std::optional<std::chrono::microseconds> since_produced) {
    auto& t = topic_stats(topic);
    t.outcomes[static_cast<std::size_t>(outcome)].fetch_add(1, std::memory_order_relaxed);
    if (since_produced) t.record_latency.observe(*since_produced);
    latency.record(since_poll);
    switch (outcome) {
        case Outcome::applied:
            applied++;
            break;
        case Outcome::duplicate_redis:
            duplicates_redis++;
            break;
        case Outcome::duplicate_postgres:
            duplicates_postgres++;
            break;
        case Outcome::duplicate_in_batch:
            duplicates_in_batch++;
            break;
        case Outcome::stale:
            stale++;
            break;
        case Outcome::dead_lettered:
            dead_lettered++;
            break;
    }
}

std::string PipelineStats::summary() const {
    return fmt::format(
        "polled={} applied={} duplicates={} (redis={} postgres={} in_batch={}) stale={} "
        "conflicts={} retries={} dead_lettered={} lost_completions={} batches={} "
        "batch_failures={}",
        polled.load(), applied.load(), duplicates(), duplicates_redis.load(),
        duplicates_postgres.load(), duplicates_in_batch.load(), stale.load(), conflicts.load(),
        retries.load(), dead_lettered.load(), lost_completions.load(), batches.load(),
        batch_failures.load());
}

}  // namespace exo
