#include "scheduling/gap_parking.hpp"

#include <algorithm>

namespace exo {

using std::chrono::milliseconds;

milliseconds park_delay(int parks, milliseconds initial, milliseconds gap_timeout,
                        milliseconds waited) {
    const milliseconds ceiling = std::clamp(gap_timeout / 4, kParkDelayFloorCap, kParkDelayCeiling);
    // Young: half the initial backoff, doubling with each park, up to 1 s.
    milliseconds step = std::max(initial / 2, milliseconds(1));
    for (int n = 1; n < parks && step < kParkDelayFloorCap; ++n) step *= 2;
    step = std::min(step, kParkDelayFloorCap);
    // Old: a quarter of the age, rounded down to a power of two seconds.
    if (waited >= kParkAgeStart) {
        milliseconds by_age = kParkDelayFloorCap;
        while (by_age * 2 <= waited / 4 && by_age < ceiling) by_age *= 2;
        step = std::max(step, by_age);
    }
    step = std::min(step, ceiling);
    // Never later than the gap times out: that try dead-letters it on time.
    if (waited < gap_timeout) step = std::min(step, gap_timeout - waited);
    return std::max(step, milliseconds(1));
}

std::optional<std::string> refuse_park(const TopicPartition& tp, ParkedLoad load,
                                       const ParkLimits& limits) {
    const auto partition = tp.topic.value + "[" + std::to_string(tp.partition.value) + "]";
    if (limits.records > 0 && load.records >= limits.records)
        return "strict-sequence gap: the parked records of partition " + partition +
               " are at the bound " + std::to_string(limits.records) +
               " (pipeline.max_parked_per_partition); raise it or fill the gap, then replay "
               "this letter";
    if (limits.bytes > 0 && load.bytes >= limits.bytes)
        return "strict-sequence gap: the parked records of partition " + partition + " hold " +
               std::to_string(load.bytes) + " bytes, at the bound " + std::to_string(limits.bytes) +
               " (pipeline.max_parked_bytes_per_partition); raise it or fill the gap, then "
               "replay this letter";
    return std::nullopt;
}

}  // namespace exo
