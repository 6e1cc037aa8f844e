// Emitting: HandlerContext::emit and BatchContext::emit check a record before
// it is buffered, so a record the outbox or Kafka cannot take fails its own
// handler run (a PermanentError: dead-lettered) instead of stalling the relay.
#include <exo/batch_handler.hpp>
#include <exo/errors.hpp>
#include <exo/handler.hpp>
#include <exo/outbox.hpp>

#include "core/text.hpp"
#include "kafka/kafka_names.hpp"

namespace exo {
namespace {

OutboxMessage checked(std::string topic, std::optional<std::string> key, std::string value,
                      std::vector<RecordHeader> headers) {
    OutboxMessage message{std::move(topic), std::move(key), std::move(value), std::move(headers)};
    if (auto problem = outbox_message_problem(message))
        throw PermanentError("cannot emit a record: " + *problem);
    return message;
}

}  // namespace

std::optional<std::string> outbox_message_problem(const OutboxMessage& message) {
    if (auto problem = topic_name_problem(message.topic))
        return "'" + printable_text(message.topic, 300) +
               "' is not a Kafka topic name: " + *problem;
    std::size_t bytes = message.value.size() + (message.key ? message.key->size() : 0);
    for (const auto& h : message.headers) {
        // Names are stored as JSON text (jsonb refuses NUL and invalid UTF-8).
        if (h.name.empty()) return std::string("a header has an empty name");
        if (!is_postgres_text(h.name))
            return "the header name " + printable_text(h.name, 300) +
                   " is not UTF-8 text without NUL bytes";
        if (h.name == kOutboxIdHeader)
            return "the header " + std::string(kOutboxIdHeader) +
                   " is reserved: the relay sets it to the record's outbox id";
        bytes += h.name.size() + (h.value ? h.value->size() : 0);
    }
    if (bytes > kMaxOutboxRecordBytes)
        return "the record is " + std::to_string(bytes) + " bytes (key, value and headers), over " +
               std::to_string(kMaxOutboxRecordBytes) + " (Kafka's default message.max.bytes)";
    return std::nullopt;
}

void HandlerContext::emit(std::string topic, std::optional<std::string> key, std::string value,
                          std::vector<RecordHeader> headers) {
    emitted_.push_back(
        checked(std::move(topic), std::move(key), std::move(value), std::move(headers)));
}

void BatchContext::emit(std::size_t i, std::string topic, std::optional<std::string> key,
                        std::string value, std::vector<RecordHeader> headers) {
    auto& entry = entries_.at(i);
    try {
        entry.emitted.push_back(
            checked(std::move(topic), std::move(key), std::move(value), std::move(headers)));
    } catch (const PermanentError&) {
        throw BatchRecordFailed(i, std::current_exception());
    }
}

}  // namespace exo
