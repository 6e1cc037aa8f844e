#pragma once
// The flags of `exo audit` turned into values, and the range each partition is
// audited over. Pure: tested without servers (tests/audit_verdict_test.cpp).
// Every error is a UsageError (exit 2) saying what to write instead.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <exo/errors.hpp>

namespace exo {

class CommandFlags;
using Arguments = CommandFlags;  // app/arguments.hpp

// --from and --to each take an offset or a time; a time becomes each
// partition's offsets through Kafka (offsets for times: the first record whose
// timestamp is at or after it).
struct AuditRequest {
    std::string topic;
    std::optional<int> partition;              // nullopt: every partition of the topic
    std::optional<std::int64_t> from;          // first offset; nullopt: the partition's start
    std::optional<std::int64_t> to;            // last offset, included; nullopt: the last record
    std::optional<std::int64_t> from_time_ms;  // instead of `from`: records from this time on
    std::optional<std::int64_t> to_time_ms;    // instead of `to`: records up to this time
    // Records per PostgreSQL lookup (and dedup rows per cursor page): what the
    // audit holds at once. 1..100,000.
    std::size_t chunk = 5000;
    bool json = false;
};

// --topic (required), --partition, --from, --to (an offset: a non-negative
// integer, or a time: ISO 8601 UTC as 2026-11-28T20:00:00Z, milliseconds
// optional; the start not after the end), --chunk, --json.
AuditRequest audit_request(const Arguments& args);

// "2026-11-28T20:00:00Z" or "2026-11-28T20:00:00.250Z" as milliseconds since
// the epoch; nullopt for anything else.
std::optional<std::int64_t> parse_utc_time(std::string_view text);

// The offsets [from, to] audited on a partition that holds [low, high) now.
struct AuditRange {
    std::int64_t from = 0;
    std::int64_t to = -1;
};
// What Kafka answered for the request's times on this partition: the first
// offset whose record's timestamp is at or after from_time_ms, and the first
// after to_time_ms (nullopt: no record is that late).
struct TimeOffsets {
    std::optional<std::int64_t> from;
    std::optional<std::int64_t> after_to;
};
// Throws UsageError when an offset of the request lies outside [low, high),
// naming the partition's offsets. An empty partition, or times no record of the
// partition falls between, give an empty range (to < from): not an error.
AuditRange audit_range(const AuditRequest& request, int partition, std::int64_t low,
                       std::int64_t high, const TimeOffsets& times = {});

}  // namespace exo
