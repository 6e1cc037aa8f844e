#include "observability/health.hpp"

#include <algorithm>

namespace exo {
namespace {

long long ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

HealthVerdict liveness(const DaemonStatus& status, DaemonStatus::Clock::time_point now,
                       std::chrono::milliseconds bound) {
    if (!status.running) return {false, "the poll loop is not running"};
    if (now - status.last_poll > bound)
        return {false, "the poll loop last turned " + std::to_string(ms(now - status.last_poll)) +
                           " ms ago (bound " + std::to_string(bound.count()) + " ms)"};
    for (const auto& r : status.runners)
        if (r.busy_since && now - *r.busy_since > bound)
            return {false, "batch runner " + std::to_string(r.index) +
                               " has been on one batch for " +
                               std::to_string(ms(now - *r.busy_since)) + " ms (bound " +
                               std::to_string(bound.count()) + " ms): a handler may hang"};
    return {true, {}};
}

HealthVerdict readiness(const DaemonStatus& status, DaemonStatus::Clock::time_point now,
                        std::chrono::milliseconds bound) {
    auto live = liveness(status, now, bound);
    if (!live.ok) return live;
    if (!status.joined) return {false, "not yet joined to the consumer group"};
    if (!status.kafka_up) return {false, "no Kafka broker connection is up"};
    // Redis and PostgreSQL count through the runners: with on_redis_down:
    // postgres_only a Redis outage does not stop the pipeline, so it does not
    // make the member unready either (exo_dependency_up still shows it); with
    // claim.store: postgres no Redis is asked at all.
    for (const auto& p : status.partitions)
        if (p.stalled)
            return {false, "partition " + p.partition.topic.value + "[" +
                               std::to_string(p.partition.partition.value) +
                               "] is stalled: a record cannot be recorded even as a dead "
                               "letter (see the error in the log)"};
    if (!status.pipeline_healthy)
        return {false,
                "the batch runners are not healthy: a dependency failed on its last use or a "
                "handler cannot prepare (see the log)"};
    return {true, {}};
}

std::chrono::milliseconds liveness_bound(std::chrono::milliseconds shutdown_timeout,
                                         std::chrono::milliseconds lease) {
    return std::max({std::chrono::milliseconds(60000), 2 * shutdown_timeout, 4 * lease});
}

}  // namespace exo
