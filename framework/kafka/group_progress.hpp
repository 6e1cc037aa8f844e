#pragma once
// How far a consumer group is behind the end of a topic: for `exo demo-check`,
// the tests and the benchmark ("committed offsets reach the end").
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace exo {

// Sum over the topic's partitions of (high watermark - committed offset) for
// `group`, or nullopt while it cannot be told (no metadata, nothing committed
// yet on a non-empty partition, a broker not answering).
std::optional<std::int64_t> group_lag(const std::string& bootstrap, const std::string& group,
                                      const std::string& topic);

// The offset `group` committed on each of `partitions` of `topic` (the next
// record it will consume; nullopt: nothing committed there), read without
// joining the group: for `exo audit`. `properties`: the consumer's (security
// settings); the ones exo reserves are ignored. Throws KafkaError when Kafka
// cannot be asked or does not answer within `timeout`.
std::map<int, std::optional<std::int64_t>> committed_offsets(
    const std::string& bootstrap, const std::map<std::string, std::string>& properties,
    const std::string& group, const std::string& topic, const std::vector<int>& partitions,
    std::chrono::milliseconds timeout);

}  // namespace exo
