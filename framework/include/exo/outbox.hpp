#pragma once
// Records a handler emits (HandlerContext::emit, BatchContext::emit): written
// to the outbox table exo_outbox in the handler's own transaction, and
// published to Kafka by the daemon's relay only after that transaction
// committed. A run that rolls back emits nothing; a duplicate record never
// runs its handler, so it never emits again. The relay publishes at least once
// (a crash between Kafka's acknowledgement and the mark re-publishes), so every
// published record carries the header exo-outbox-id, stable across
// re-publications: a downstream exo binding keyed by that header
// (`key: {header: exo-outbox-id}`) applies each record exactly once.
// docs/outbox.md has the protocol and its ordering argument.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/record.hpp>

namespace exo {

struct OutboxMessage {
    std::string topic;
    std::optional<std::string> key;  // the Kafka message key; nullopt: no key
    std::string value;               // any bytes
    std::vector<RecordHeader> headers;
};

// The header the relay adds to every record it publishes: the row's id (a UUID),
// the same on every re-publication.
inline constexpr std::string_view kOutboxIdHeader = "exo-outbox-id";

// librdkafka's default message.max.bytes: the largest record the relay's
// producer takes unless kafka.properties sets message.max.bytes.
inline constexpr std::size_t kDefaultMaxMessageBytes = 1000000;

// The size librdkafka checks against message.max.bytes when the relay produces
// `message` (rd_kafka_msg_max_wire_size: a v2 record's largest framing, the key,
// the value and each header's name and value with their varint lengths),
// including the exo-outbox-id header the relay adds. A record over the limit is
// refused by produce() on every attempt, so it could never be published.
std::size_t outbox_wire_size(const OutboxMessage& message);

// What is wrong with `message` as an emitted record, in words for the
// dead-letter reason, or nullopt: an illegal topic name, a header name that is
// empty, not UTF-8 or holds a NUL byte, the reserved header exo-outbox-id, or a
// record whose outbox_wire_size is over `max_message_bytes` (the relay
// producer's message.max.bytes). Keys, values and header values may be any bytes.
std::optional<std::string> outbox_message_problem(
    const OutboxMessage& message, std::size_t max_message_bytes = kDefaultMaxMessageBytes);

}  // namespace exo
