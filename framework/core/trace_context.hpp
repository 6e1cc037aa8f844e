#pragma once
// W3C trace context for records (exo/trace.hpp): reading a record's
// traceparent and tracestate headers, and starting a trace when they give none.
// Pure but for the random ids (a per-thread generator); no spdlog: the caller
// logs what traceparent_problem() says.
//
// The parsing rule (W3C Trace Context, "traceparent Header Field Values"):
// version-traceid-parentid-flags in lowercase hex. Version ff is invalid; version
// 00 is exactly 55 characters; a later version is read by its first four fields
// and must be exactly those or go on with '-' (so a newer sender still joins).
// An all-zero trace id or parent id is invalid. Anything invalid is not the
// record's fault: exo starts a new trace for it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/record.hpp>
#include <exo/trace.hpp>

namespace exo {

inline constexpr std::string_view kTraceparentHeader = "traceparent";
inline constexpr std::string_view kTracestateHeader = "tracestate";
// On a dead letter: exo's traceparent for the record's processing, next to the
// record's own headers, which a dead letter keeps as received.
inline constexpr std::string_view kExoTraceparentHeader = "exo-traceparent";

struct Traceparent {
    std::string trace_id;   // 32 lowercase hex digits, not all zero
    std::string parent_id;  // 16 lowercase hex digits, not all zero
    bool sampled = false;   // trace-flags bit 0
};

struct TraceparentParse {
    std::optional<Traceparent> traceparent;  // set: the value is valid
    std::string problem;                     // else why not, in words for a log line
};

TraceparentParse parse_traceparent(std::string_view value);

// A new random id of `bytes` bytes as lowercase hex, never all zero (16 for a
// trace id, 8 for a span id). Thread-safe: each thread has its own generator,
// seeded from std::random_device.
std::string random_trace_hex(std::size_t bytes);

// The trace of one delivery of `record`: its traceparent continued (with its
// tracestate) when valid, else a new trace; a new span id either way.
TraceContext start_trace(const Record& record);

// Why the record's traceparent header was not used, or nullopt when it was, or
// when the record has none (a trace is then started as a matter of course).
std::optional<std::string> traceparent_problem(const Record& record);

// Adds `trace`'s traceparent (and tracestate, if any) to the headers of a
// record it causes, unless they already hold a traceparent: a handler that set
// one knows better which trace its record belongs to.
void add_trace_headers(std::vector<RecordHeader>& headers, const TraceContext& trace);

}  // namespace exo
