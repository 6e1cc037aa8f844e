#pragma once
// A hash of a topic-partition: for unordered containers, and the daemon's
// choice of a partition's worker (so it must stay stable within a process).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <exo/types.hpp>

namespace exo {

struct TopicPartitionHash {
    std::size_t operator()(const TopicPartition& tp) const noexcept {
        return std::hash<std::string>{}(tp.topic.value) * 31u +
               std::hash<std::int32_t>{}(tp.partition.value);
    }
};

}  // namespace exo
