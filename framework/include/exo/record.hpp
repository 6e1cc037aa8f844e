#pragma once
// A Kafka record copied out of librdkafka, so its lifetime is independent of
// the consumer handle (librdkafka wants its messages destroyed before close).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <exo/types.hpp>

namespace exo {

struct RecordHeader {
    std::string name;
    std::optional<std::string> value;  // Kafka allows null header values
};

struct Record {
    Topic topic;
    Partition partition;
    Offset offset;
    std::optional<std::string> key;  // the Kafka message key (not the idempotency key)
    std::string value;               // the payload
    std::vector<RecordHeader> headers;
    std::int64_t timestamp_ms = -1;  // -1 when the broker gave none

    TopicPartition topic_partition() const { return {topic, partition}; }
    // First header with this name, if any (Kafka allows repeated names).
    const RecordHeader* header(std::string_view name) const {
        for (const auto& h : headers)
            if (h.name == name) return &h;
        return nullptr;
    }
};

}  // namespace exo
