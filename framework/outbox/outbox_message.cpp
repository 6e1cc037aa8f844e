// Emitting: HandlerContext::emit checks a record before
// it is buffered, so a record the outbox or Kafka cannot take fails its own
// handler run (a PermanentError: dead-lettered) instead of stalling the relay.
#include <exo/errors.hpp>
#include <exo/handler.hpp>
#include <exo/outbox.hpp>

#include "core/text.hpp"
#include "core/trace_context.hpp"
#include "kafka/kafka_names.hpp"

namespace exo {
namespace {

// librdkafka's RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD: a record's length, attributes,
// timestamp and offset deltas, key and value lengths and header count, each
// varint at its widest.
constexpr std::size_t kRecordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 5;
// The relay's exo-outbox-id header: its name and a UUID in text.
constexpr std::size_t kOutboxIdValueBytes = 36;

// A zigzag varint's width, as librdkafka writes header lengths.
std::size_t varint_bytes(std::size_t n) {
    std::uint64_t v = static_cast<std::uint64_t>(n) << 1;
    std::size_t width = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++width;
    }
    return width;
}

std::size_t header_bytes(std::size_t name, std::optional<std::size_t> value) {
    // A null value is written as length -1: one byte.
    return varint_bytes(name) + name + (value ? varint_bytes(*value) + *value : 1);
}

OutboxMessage checked(std::string topic, std::optional<std::string> key, std::string value,
                      std::vector<RecordHeader> headers, const EmitLimits& limits) {
    OutboxMessage message{std::move(topic), std::move(key), std::move(value), std::move(headers)};
    if (auto problem = outbox_message_problem(message, limits))
        throw PermanentError("cannot emit a record: " + *problem);
    return message;
}

// A context exo made without limits (the handler test kit): librdkafka's defaults.
const EmitLimits kNoLimits;

}  // namespace

std::size_t outbox_wire_size(const OutboxMessage& message) {
    std::size_t bytes = kRecordOverhead + message.value.size() +
                        (message.key ? message.key->size() : 0) +
                        header_bytes(kOutboxIdHeader.size(), kOutboxIdValueBytes);
    for (const auto& h : message.headers)
        bytes +=
            header_bytes(h.name.size(), h.value ? std::optional(h.value->size()) : std::nullopt);
    return bytes;
}

std::optional<std::string> outbox_message_problem(const OutboxMessage& message,
                                                  std::size_t max_message_bytes) {
    return outbox_message_problem(message, EmitLimits(max_message_bytes));
}

std::optional<std::string> outbox_message_problem(const OutboxMessage& message,
                                                  const EmitLimits& limits) {
    if (auto problem = topic_name_problem(message.topic))
        return "'" + printable_text(message.topic, 300) +
               "' is not a Kafka topic name: " + *problem;
    for (const auto& h : message.headers) {
        // Names are stored as JSON text (jsonb refuses NUL and invalid UTF-8).
        if (h.name.empty()) return std::string("a header has an empty name");
        if (!is_postgres_text(h.name))
            return "the header name " + printable_text(h.name, 300) +
                   " is not UTF-8 text without NUL bytes";
        if (h.name == kOutboxIdHeader)
            return "the header " + std::string(kOutboxIdHeader) +
                   " is reserved: the relay sets it to the record's outbox id";
    }
    const auto bytes = outbox_wire_size(message);
    if (bytes > limits.producer_bytes())
        return "the record is " + std::to_string(bytes) +
               " bytes on the wire (key, value, headers, exo-outbox-id and Kafka's record "
               "framing), over the producer's message.max.bytes of " +
               std::to_string(limits.producer_bytes()) + ": Kafka would refuse it on every attempt";
    // The broker counts a whole record batch: the relay's record alone in one is the least.
    if (const auto topic_bytes = limits.topic_bytes(message.topic);
        topic_bytes && bytes + kRecordBatchOverhead > *topic_bytes)
        return "the record is " + std::to_string(bytes) +
               " bytes on the wire (key, value, headers, exo-outbox-id and Kafka's record "
               "framing), " +
               std::to_string(bytes + kRecordBatchOverhead) +
               " with a record batch's header, over topic '" + message.topic +
               "''s max.message.bytes of " + std::to_string(*topic_bytes) +
               " (as its broker reported it at start-up): the broker would refuse it on every "
               "attempt";
    return std::nullopt;
}

void HandlerContext::emit(std::string topic, std::optional<std::string> key, std::string value,
                          std::vector<RecordHeader> headers) {
    add_trace_headers(headers, trace());
    try {
        emitted_.push_back(checked(std::move(topic), std::move(key), std::move(value),
                                   std::move(headers), emit_limits_ ? *emit_limits_ : kNoLimits));
    } catch (const PermanentError&) {
        fail_with_current();
    }
}

}  // namespace exo
