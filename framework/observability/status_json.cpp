#include "observability/status_json.hpp"

#include <nlohmann/json.hpp>

namespace exo {
namespace {

nlohmann::json verdict(const HealthVerdict& v) {
    return {{"ok", v.ok}, {"reason", v.ok ? nlohmann::json(nullptr) : nlohmann::json(v.reason)}};
}

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string status_json(const DaemonStatus& status, const HealthVerdict& live,
                        const HealthVerdict& ready, DaemonStatus::Clock::time_point now) {
    nlohmann::json out;
    out["live"] = verdict(live);
    out["ready"] = verdict(ready);
    out["joined"] = status.joined;
    out["dependencies"] = {{"postgres", status.postgres_up}, {"kafka", status.kafka_up}};
    if (status.redis_used) out["dependencies"]["redis"] = status.redis_up;
    // "workers" keeps the name and fields of the per-worker list of earlier
    // versions, so readers of /status keep working: one entry per batch runner,
    // each with the pipeline's one health.
    out["workers"] = nlohmann::json::array();
    for (const auto& r : status.runners) {
        std::optional<long long> busy_ms;
        if (r.busy_since)
            busy_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(now - *r.busy_since).count();
        out["workers"].push_back({{"index", r.index},
                                  {"healthy", status.pipeline_healthy},
                                  {"busy_ms", or_null(busy_ms)}});
    }
    out["partitions"] = nlohmann::json::array();
    for (const auto& p : status.partitions)
        out["partitions"].push_back({{"topic", p.partition.topic.value},
                                     {"partition", p.partition.partition.value},
                                     {"paused", p.paused},
                                     {"stalled", p.stalled},
                                     {"committed", or_null(p.committed)},
                                     {"queued", p.queued},
                                     {"in_flight", p.in_flight},
                                     {"parked", p.parked},
                                     {"parked_bytes", p.parked_bytes},
                                     {"bytes", p.bytes},
                                     {"lag", or_null(p.lag)}});
    // Topic names are Kafka-legal ASCII; replace anything else rather than throw.
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace exo
