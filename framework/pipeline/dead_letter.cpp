#include "pipeline/dead_letter.hpp"

#include "core/exo_headers.hpp"
#include "core/text.hpp"
#include "core/trace_context.hpp"

namespace exo {

OutgoingRecord make_dead_letter(const PendingRecord& pending, const std::string& dlq_topic,
                                const std::string& consumer_group, const std::string& error,
                                const std::string& idempotency_key, DeadLetterValue value) {
    const Record& r = pending.record;
    OutgoingRecord out;
    out.topic = dlq_topic;
    out.key = r.key;
    if (value == DeadLetterValue::original) out.value = r.value;
    // The record's own exo-* headers are renamed: whoever produced the record
    // chose them, and a reader must find exo's below, not theirs.
    out.headers.reserve(r.headers.size() + 10);
    for (const auto& h : r.headers)
        out.headers.push_back({dead_letter_header_name(h.name), h.value});
    out.headers.push_back({"exo-error", printable_text(error, kMaxDeadLetterReasonBytes)});
    out.headers.push_back({"exo-attempts", std::to_string(pending.attempts)});
    out.headers.push_back({"exo-original-topic", r.topic.value});
    out.headers.push_back({"exo-original-partition", std::to_string(r.partition.value)});
    out.headers.push_back({"exo-original-offset", std::to_string(r.offset.value)});
    out.headers.push_back({"exo-consumer-group", consumer_group});
    if (!idempotency_key.empty()) out.headers.push_back({"exo-idempotency-key", idempotency_key});
    if (value == DeadLetterValue::omitted)
        out.headers.push_back({"exo-value-omitted", std::to_string(r.value.size())});
    // Dropped at poll for being too many (record_limits.hpp): their count only.
    if (pending.headers_omitted > 0)
        out.headers.push_back({"exo-headers-omitted", std::to_string(pending.headers_omitted)});
    // The record's trace, as its log lines name it. Its own headers stay as
    // received (a malformed traceparent too); one it did not have is added, so
    // a W3C-aware reader of the dead-letter topic continues the trace.
    out.headers.push_back({std::string(kExoTraceparentHeader), pending.trace.traceparent()});
    if (r.header(kTraceparentHeader) == nullptr)
        out.headers.push_back({std::string(kTraceparentHeader), pending.trace.traceparent()});
    return out;
}

}  // namespace exo
