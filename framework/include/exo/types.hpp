#pragma once
// Strong types for Kafka coordinates, so a partition can never
// be passed where an offset is expected (redpanda's model/fundamental.h).
#include <compare>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

namespace exo {

template <class Tag, class T>
struct StrongValue {
    T value{};
    constexpr StrongValue() = default;
    constexpr explicit StrongValue(T v) : value(std::move(v)) {}
    friend constexpr auto operator<=>(const StrongValue&, const StrongValue&) = default;
    friend std::ostream& operator<<(std::ostream& os, const StrongValue& v) {
        return os << v.value;
    }
};

using Topic = StrongValue<struct TopicTag, std::string>;
using Partition = StrongValue<struct PartitionTag, std::int32_t>;
// A Kafka offset. The offset *committed* for a partition is the next one to
// read, i.e. the last finished offset + 1.
using Offset = StrongValue<struct OffsetTag, std::int64_t>;

struct TopicPartition {
    Topic topic;
    Partition partition;
    friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
    friend std::ostream& operator<<(std::ostream& os, const TopicPartition& tp) {
        return os << tp.topic.value << '[' << tp.partition.value << ']';
    }
};

}  // namespace exo
