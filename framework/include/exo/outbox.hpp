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
#include <functional>
#include <map>
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

// A record batch's header (Kafka's v2 RecordBatch: base offset, length, leader epoch, magic,
// CRC, attributes, offset delta, timestamps, producer id and epoch, base sequence, count):
// what a broker counts against a topic's max.message.bytes besides the records.
inline constexpr std::size_t kRecordBatchOverhead = 61;

// The largest record emit() accepts, per topic: the relay producer's message.max.bytes,
// and for a topic whose max.message.bytes the brokers reported at start-up (the topics
// of outbox.topics) that limit too. exo fills it before any handler runs; it is read-only
// afterwards, so any thread may read it.
class EmitLimits {
public:
    explicit EmitLimits(std::size_t producer_bytes = kDefaultMaxMessageBytes)
        : producer_bytes_(producer_bytes) {}

    std::size_t producer_bytes() const { return producer_bytes_; }
    // `bytes`: the topic's max.message.bytes as its broker reported it (the topic's own
    // setting, else the broker's message.max.bytes).
    void set_topic_bytes(std::string topic, std::size_t bytes) {
        topic_bytes_[std::move(topic)] = bytes;
    }
    std::optional<std::size_t> topic_bytes(std::string_view topic) const {
        const auto it = topic_bytes_.find(topic);
        return it == topic_bytes_.end() ? std::nullopt : std::optional(it->second);
    }
    const std::map<std::string, std::size_t, std::less<>>& topics() const { return topic_bytes_; }
    // The smallest topic limit learned; nullopt when none was.
    std::optional<std::size_t> smallest_topic_bytes() const {
        std::optional<std::size_t> smallest;
        for (const auto& [topic, bytes] : topic_bytes_)
            if (!smallest || bytes < *smallest) smallest = bytes;
        return smallest;
    }

private:
    std::size_t producer_bytes_;
    std::map<std::string, std::size_t, std::less<>> topic_bytes_;
};

// What is wrong with `message` as an emitted record, in words for the
// dead-letter reason, or nullopt: an illegal topic name, a header name that is
// empty, not UTF-8 or holds a NUL byte, the reserved header exo-outbox-id, a
// record whose outbox_wire_size is over the relay producer's message.max.bytes, or
// one that in a batch of its own (outbox_wire_size + kRecordBatchOverhead) is over
// its topic's max.message.bytes as the brokers reported it (`limits`). Sizes are
// counted uncompressed, as librdkafka checks them: a compressed batch may be
// smaller, never larger. Keys, values and header values may be any bytes.
std::optional<std::string> outbox_message_problem(const OutboxMessage& message,
                                                  const EmitLimits& limits);
// The same with the producer's limit only (`max_message_bytes`).
std::optional<std::string> outbox_message_problem(
    const OutboxMessage& message, std::size_t max_message_bytes = kDefaultMaxMessageBytes);

}  // namespace exo
