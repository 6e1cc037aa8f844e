#include "kafka/kafka_names.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace exo {

std::optional<std::string> topic_name_problem(std::string_view name) {
    if (name.empty()) return "a topic name must not be empty";
    if (name.size() > kMaxTopicNameLength)
        return "a topic name has at most " + std::to_string(kMaxTopicNameLength) + " characters";
    if (name == "." || name == "..") return "a topic name cannot be '.' or '..'";
    const bool legal = std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '_' || c == '-';
    });
    if (!legal) {
        return "topic '" + std::string(name) +
               "' has characters Kafka refuses; use letters, digits, '.', '_' and '-'";
    }
    return std::nullopt;
}

TopicSpecText split_topic_spec(std::string_view spec) noexcept {
    const std::size_t colon = spec.rfind(':');
    if (colon == std::string_view::npos) return {spec, std::nullopt};
    return {spec.substr(0, colon), spec.substr(colon + 1)};
}

std::optional<int> partition_count(std::string_view text) noexcept {
    int count = 0;
    const char* end = text.data() + text.size();
    const auto [stop, ec] = std::from_chars(text.data(), end, count);
    if (ec != std::errc{} || stop != end || count < 1) return std::nullopt;
    return count;
}

bool is_reserved_consumer_property(std::string_view name) noexcept {
    static constexpr std::array<std::string_view, 3> kReserved = {"group.id", "enable.auto.commit",
                                                                  "enable.auto.offset.store"};
    return std::find(kReserved.begin(), kReserved.end(), name) != kReserved.end();
}

bool is_consumer_only_property(std::string_view name) noexcept {
    static constexpr std::array<std::string_view, 20> kConsumerOnly = {
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "group.instance.id",
        "group.protocol.type",
        "partition.assignment.strategy",
        "coordinator.query.interval.ms",
        "auto.commit.interval.ms",
        "auto.offset.reset",
        "enable.partition.eof",
        "check.crcs",
        "isolation.level",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "fetch.wait.max.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "fetch.error.backoff.ms",
        "fetch.message.max.bytes",
        "max.partition.fetch.bytes"};
    return is_reserved_consumer_property(name) ||
           std::find(kConsumerOnly.begin(), kConsumerOnly.end(), name) != kConsumerOnly.end();
}

}  // namespace exo
