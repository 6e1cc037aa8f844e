#pragma once
// The demo's own Kafka client, on librdkafka's C API: what a team's seeding
// and checking tools would write with their Kafka client. exo's clients are
// private to it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace exo::demo {

struct DemoRecord {
    std::string topic;
    std::optional<int> partition;  // nullopt: by key, librdkafka's default partitioner
    std::string key;
    std::string value;
};

// Produces `records` in order with an idempotent producer and waits up to
// 60 s for every acknowledgement. Throws std::runtime_error naming the first
// record Kafka refused, or when not all were acknowledged in time.
void produce_all(const std::string& bootstrap, const std::vector<DemoRecord>& records);

// Sum over `topic`'s partitions of (end offset - `group`'s committed offset),
// or nullopt while it cannot be told (no metadata yet, nothing committed on a
// non-empty partition, a broker not answering).
std::optional<std::int64_t> consumer_lag(const std::string& bootstrap, const std::string& group,
                                         const std::string& topic);

}  // namespace exo::demo
