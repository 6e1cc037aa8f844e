#pragma once
// When the poll loop pauses and resumes a partition's fetching (
// docs/design.md#ordering-and-concurrency, memory bounds): a partition is paused once its records
// in the pipeline reach pipeline.max_queued_per_partition or max_queued_bytes_per_partition, or its
// held keys' spilled offsets reach kSpilledPerQueued times the first, or the whole process reaches
// max_in_flight / max_in_flight_bytes; it is resumed once every one of them is
// at half. Hysteresis, so a partition at its bound is not paused and resumed
// on every poll. A pause never holds back what is queued already, so a record
// larger than a bound alone pauses its partition until it is done, no longer.
//
// Pure and not thread-safe: the daemon measures each partition's load, asks
// which partitions change, and pauses and resumes them in the consumer.
#include <cstddef>
#include <map>
#include <set>
#include <vector>

#include <exo/types.hpp>
#include "config/config.hpp"

namespace exo {

struct PauseLimits {
    std::size_t records = 0;        // per partition
    std::size_t bytes = 0;          // per partition
    std::size_t spilled = 0;        // a partition's held keys' spilled offsets
    std::size_t total_records = 0;  // the whole process
    std::size_t total_bytes = 0;
    // A partition whose held keys spilled this many offsets per record of
    // max_queued_per_partition is paused after all: memory stays bounded (an
    // offset costs some 60 bytes: its place in the lane and in the offset
    // tracker) when a hot key is held for long.
    static constexpr std::size_t kSpilledPerQueued = 100;
    static PauseLimits of(const PipelineConfig& pipeline);
};

// One partition's share of the pipeline, its held keys' queued records left
// out (worker_inbox.hpp: one key's retries must not pause the other keys).
struct PartitionLoad {
    std::size_t records = 0;
    std::size_t bytes = 0;
    std::size_t spilled_held = 0;
};

class PausePolicy {
public:
    explicit PausePolicy(PauseLimits limits) : limits_(limits) {}

    struct Changes {
        std::vector<TopicPartition> pause, resume;
    };
    // The partitions to pause and to resume now, given the process's records
    // and bytes in flight and each assigned partition's load; from then on
    // paused() says so. A partition missing from `loads` keeps its state.
    Changes update(std::size_t total_records, std::size_t total_bytes,
                   const std::map<TopicPartition, PartitionLoad>& loads);
    bool paused(const TopicPartition& tp) const { return paused_.contains(tp); }
    // Whether update() would change nothing whatever each partition's load,
    // from the process's totals alone: nothing is paused, the process is below
    // its own bounds and below half of every per-partition bound (no partition
    // carries more than the whole), and no key has spilled offsets. The poll
    // loop asks on every turn, so that a steady trickle, a turn for every few
    // records, does not measure every assigned partition each time.
    bool quiet(std::size_t total_records, std::size_t total_bytes,
               std::size_t total_spilled) const {
        return paused_.empty() && !over_total_ && total_records < limits_.total_records &&
               total_bytes < limits_.total_bytes && !near_bound(total_records, total_bytes) &&
               total_spilled == 0;
    }
    // Whether a partition's load is low enough that its held keys need no
    // look: above half of a per-partition bound they may matter.
    bool near_bound(std::size_t records, std::size_t bytes) const {
        return records > limits_.records / 2 || bytes > limits_.bytes / 2;
    }
    // The partition was revoked or assigned again: the consumer dropped its
    // pause, so it starts unpaused.
    void forget(const TopicPartition& tp) { paused_.erase(tp); }

private:
    PauseLimits limits_;
    bool over_total_ = false;
    std::set<TopicPartition> paused_;
};

}  // namespace exo
