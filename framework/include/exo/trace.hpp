#pragma once
// A record's W3C trace context (https://www.w3.org/TR/trace-context/) as exo
// carries it: propagation only, exo exports no spans (docs/tracing.md).
//
// Every record exo consumes has one, decided once per delivery when it is
// polled: the record's own `traceparent` header continues its trace; a record
// without a valid one (none, or malformed: not an error of the record) starts
// a new trace with a random trace id. The same trace id and span id then
// appear in the record's log lines (fields trace_id and span_id), in
// ctx.trace() for its handler, on the records it emits (their traceparent
// names span_id as parent) and on its dead letter.
#include <cstdint>
#include <string>

namespace exo {

struct TraceContext {
    // 32 lowercase hex digits, never all zero: the trace this record belongs to.
    std::string trace_id;
    // 16 lowercase hex digits, never all zero: exo's processing of this
    // delivery, new for each delivery. The parent-id of the traceparent of
    // every record this record's handler emits, and of its dead letter.
    std::string span_id;
    // 16 lowercase hex digits: the span that produced the record (its
    // traceparent's parent-id); empty when exo started the trace.
    std::string parent_id;
    // The sampled flag (W3C trace-flags bit 0) as received; true for a trace exo
    // starts, so downstream services that follow their parent's decision record it.
    bool sampled = true;
    // The record's `tracestate` header as received (several joined with ','),
    // kept only when its traceparent is valid; empty otherwise.
    std::string tracestate;

    // True when the trace came from the record's traceparent header.
    bool continued() const { return !parent_id.empty(); }
    // "00-<trace_id>-<span_id>-<flags>": the traceparent to send on a call this
    // record causes (an HTTP request, say), so the callee joins this trace as a
    // child of exo's span. emit() adds it to emitted records by itself.
    std::string traceparent() const;
};

}  // namespace exo
