#pragma once
// What a polled record costs in memory, as flow control counts it
// (pipeline.max_in_flight_bytes, pipeline.max_queued_bytes_per_partition), and
// the bound on its headers (pipeline.max_headers_per_record). Pure.
#include <cstddef>

#include <exo/record.hpp>

namespace exo {

struct PendingRecord;

// Per header, besides its name and value: the RecordHeader itself (two strings
// in place). An empty header is no longer free, so a flood of them counts.
inline constexpr std::size_t kHeaderOverheadBytes = sizeof(RecordHeader);
// Per record, besides its key, value and headers: the PendingRecord (its
// strings, trace and counters in place) and its place in a lane's queue and in
// a batch. A static_assert in record_limits.cpp keeps it above sizeof(PendingRecord).
inline constexpr std::size_t kRecordOverheadBytes = 1024;

// The key, the value, every header's name and value, kHeaderOverheadBytes per
// header and kRecordOverheadBytes. The bytes librdkafka copied out of its
// buffers plus a fixed cost, not the allocator's exact figure: what the
// parsed JSON of a record in a batch costs on top is bounded by
// pipeline.batch_size, not counted here.
std::size_t memory_bytes(const Record& record);

// A record with more than `max_headers` headers is judged a dead letter at
// once (PendingRecord::dead_letter, a reason naming the count, the bound and the
// Kafka key), and its headers are freed now: the letter carries none of them
// (make_dead_letter adds exo-headers-omitted with their count), its handler
// never runs, and flow control counts only what is left.
// The verdict does not record the key (record_key: false): no dedup row, so a
// redelivery is dead-lettered again. Returns whether it was over the bound.
bool refuse_excess_headers(PendingRecord& pending, std::size_t max_headers);

}  // namespace exo
