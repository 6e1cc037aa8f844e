#pragma once
// How far a consumer group is behind the end of a topic: for `exo demo-check`,
// the tests and the benchmark ("committed offsets reach the end").
#include <cstdint>
#include <optional>
#include <string>

namespace exo {

// Sum over the topic's partitions of (high watermark - committed offset) for
// `group`, or nullopt while it cannot be told (no metadata, nothing committed
// yet on a non-empty partition, a broker not answering).
std::optional<std::int64_t> group_lag(const std::string& bootstrap, const std::string& group,
                                      const std::string& topic);

}  // namespace exo
