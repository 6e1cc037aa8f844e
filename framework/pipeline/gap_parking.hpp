#pragma once
// Records parked on a strict-sequence gap (docs/design.md, "strict-sequence
// gap"): how long one waits before its next try, and how many a partition may
// keep parked (pipeline.max_parked_per_partition,
// pipeline.max_parked_bytes_per_partition). Pure.
//
// Parked records are outside flow control on purpose (pausing for them could
// keep out the very predecessor they wait for), so they have a bound of their
// own: past it a *new* gap is dead-lettered at once, without a dedup row, like a
// gap timeout (`exo dlq replay` applies it later, once), instead of pausing.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <exo/types.hpp>

namespace exo {

// The ladder's ceiling: a quarter of gap_timeout_ms, kept within [1 s, 30 s].
// Below 1 s a long gap costs a transaction a second (what it cost before the
// ladder grew); above 30 s a filled gap would go unnoticed for too long.
inline constexpr std::chrono::milliseconds kParkDelayFloorCap{1000};
inline constexpr std::chrono::milliseconds kParkDelayCeiling{30000};

// The wait after a record's `parks`-th park (1: the first): half of
// retry_backoff_initial_ms (`initial`), doubling with each park, up to
// clamp(gap_timeout / 4, 1 s, 30 s); never past the gap timeout itself
// (`waited`: since the gap's first sighting), so the last try comes as the gap
// times out rather than up to a ceiling later; at least 1 ms. Without jitter:
// records of an entity parked together (the same number of times) come back
// together, in offset order, to apply in one batch. With the defaults (100 ms,
// 60 s) a record parked for the whole gap timeout is tried 13 times, not 60.
std::chrono::milliseconds park_delay(int parks, std::chrono::milliseconds initial,
                                     std::chrono::milliseconds gap_timeout,
                                     std::chrono::milliseconds waited);

// What a partition keeps parked, as the bound counts it: records, and their
// PendingRecord::bytes (record_limits.hpp, as max_queued_bytes_per_partition).
struct ParkedLoad {
    std::size_t records = 0;
    std::size_t bytes = 0;
};

// pipeline.max_parked_per_partition, pipeline.max_parked_bytes_per_partition;
// 0: no bound (the default of a WorkerInbox built without them, in tests).
struct ParkLimits {
    std::size_t records = 0;
    std::size_t bytes = 0;
};

// Why a record meeting a new gap in `tp` may not be parked with `load` already
// parked there: the dead-letter reason; nullopt: it may. At the bound, not
// beyond it: the bytes may exceed theirs by one record (as a pause lets in the
// record that crosses max_queued_bytes_per_partition).
std::optional<std::string> refuse_park(const TopicPartition& tp, ParkedLoad load,
                                       const ParkLimits& limits);

}  // namespace exo
