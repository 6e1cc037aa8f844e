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
// The age from which a gap's retries back off with its age.
inline constexpr std::chrono::milliseconds kParkAgeStart{4000};

// The wait after a record's `parks`-th park (1: the first), given `waited`
// since the gap's first sighting. A young gap is usually a predecessor right
// behind, and is retried as it always was: half of retry_backoff_initial_ms
// (`initial`), doubling with each park, up to 1 s. From 4 s of age the wait is a
// quarter of the age rounded down to a power of two seconds (4-8 s: 1 s, 8-16
// s: 2 s, 16-32 s: 4 s...), up to clamp(gap_timeout / 4, 1 s, 30 s): a gap
// that lasts is likely a real one, and is tried less and less often, while one
// filled after t seconds is noticed at most t/4 later. Never past the gap
// timeout itself, so the last try comes as the gap times out; at least 1 ms.
// The wait grows with the age, not the number of parks: a record NACKed or
// parked many times in a few seconds (its entity's records running on other
// workers) is not pushed away from a gap about to fill. Without jitter:
// records of an entity parked together (the same number of times, in the
// same age bracket) come back together, in offset order, to apply in one
// batch. With the defaults (100 ms, 60 s) a record parked for the whole gap
// timeout is tried 24 times, not 60.
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
