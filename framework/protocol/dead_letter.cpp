#include "protocol/dead_letter.hpp"

#include <exo/outbox.hpp>

#include "core/exo_headers.hpp"
#include "core/text.hpp"
#include "core/trace_context.hpp"
#include "pg/migrations.hpp"

namespace exo {
namespace {

std::string omitted(std::string_view bytes) {
    return omitted_bytes_text(bytes.size(), sha256_hex(bytes));
}

bool kept(const RecordHeader& h) {
    return h.name.size() + (h.value ? h.value->size() : 0) <= kMaxKeptDeadLetterBytes;
}

// One digest of all the headers: each name and value as "<size>:<bytes>" (a null
// value as "-"), so no two lists of headers give the same text.
std::string all_headers_omitted(const std::vector<RecordHeader>& headers) {
    std::string text;
    std::size_t bytes = 0;
    for (const auto& h : headers) {
        text += std::to_string(h.name.size()) + ":" + h.name;
        text += h.value ? std::to_string(h.value->size()) + ":" + *h.value : std::string("-");
        bytes += h.name.size() + (h.value ? h.value->size() : 0);
    }
    return std::to_string(headers.size()) + " headers, " +
           omitted_bytes_text(bytes, sha256_hex(text));
}

}  // namespace

OutgoingRecord make_dead_letter(const PendingRecord& pending, const std::string& dlq_topic,
                                const std::string& consumer_group, const std::string& error,
                                const std::string& idempotency_key, DeadLetterShape shape) {
    const Record& r = pending.record;
    const bool key_omitted =
        shape >= DeadLetterShape::digested && r.key && r.key->size() > kMaxKeptDeadLetterBytes;
    OutgoingRecord out;
    out.topic = dlq_topic;
    if (!key_omitted) out.key = r.key;
    if (shape == DeadLetterShape::original) out.value = r.value;
    // The record's own exo-* headers are renamed: whoever produced the record
    // chose them, and a reader must find exo's below, not theirs.
    out.headers.reserve(r.headers.size() + 12);
    if (shape == DeadLetterShape::headers_omitted) {
        if (!r.headers.empty())
            out.headers.push_back({"exo-headers-omitted", all_headers_omitted(r.headers)});
    } else {
        for (const auto& h : r.headers) {
            if (shape == DeadLetterShape::digested && !kept(h))
                out.headers.push_back({"exo-header-omitted",
                                       printable_text(h.name, 256) + ": " +
                                           (h.value ? omitted(*h.value) : std::string("null"))});
            else
                out.headers.push_back({dead_letter_header_name(h.name), h.value});
        }
    }
    out.headers.push_back({"exo-error", printable_text(error, kMaxDeadLetterReasonBytes)});
    out.headers.push_back({"exo-attempts", std::to_string(pending.attempts)});
    out.headers.push_back({"exo-original-topic", r.topic.value});
    out.headers.push_back({"exo-original-partition", std::to_string(r.partition.value)});
    out.headers.push_back({"exo-original-offset", std::to_string(r.offset.value)});
    out.headers.push_back({"exo-consumer-group", consumer_group});
    if (!idempotency_key.empty()) out.headers.push_back({"exo-idempotency-key", idempotency_key});
    if (shape != DeadLetterShape::original)
        out.headers.push_back({"exo-value-omitted", std::to_string(r.value.size())});
    // Dropped at poll for being too many (record_limits.hpp): their count only.
    if (pending.headers_omitted > 0)
        out.headers.push_back({"exo-headers-omitted", std::to_string(pending.headers_omitted)});
    if (key_omitted) out.headers.push_back({"exo-key-omitted", omitted(*r.key)});
    // The record's trace, as its log lines name it. Its own headers stay as
    // received (a malformed traceparent too); one it did not have is added, so
    // a W3C-aware reader of the dead-letter topic continues the trace.
    out.headers.push_back({std::string(kExoTraceparentHeader), pending.trace.traceparent()});
    if (r.header(kTraceparentHeader) == nullptr)
        out.headers.push_back({std::string(kTraceparentHeader), pending.trace.traceparent()});
    return out;
}

DeadLetterShape fitting_dead_letter_shape(const PendingRecord& pending,
                                          const std::string& dlq_topic,
                                          const std::string& consumer_group,
                                          const std::string& error,
                                          const std::string& idempotency_key,
                                          std::size_t max_message_bytes, DeadLetterShape from) {
    for (auto shape = from; shape < DeadLetterShape::headers_omitted;
         shape = static_cast<DeadLetterShape>(static_cast<int>(shape) + 1)) {
        const auto letter =
            make_dead_letter(pending, dlq_topic, consumer_group, error, idempotency_key, shape);
        if (outbox_wire_size({letter.topic, letter.key, letter.value, letter.headers}) <=
            max_message_bytes)
            return shape;
    }
    return DeadLetterShape::headers_omitted;
}

}  // namespace exo
