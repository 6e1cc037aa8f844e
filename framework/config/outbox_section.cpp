// outbox: the relay that publishes the records handlers emit (docs/outbox.md).
#include <charconv>
#include <map>

#include "config/sections.hpp"
#include "core/text.hpp"
#include "kafka/kafka_names.hpp"

namespace exo::config_reading {

const Choices<bool> kSwitch = {{"true", true}, {"false", false}};

const Keys kOutboxKeys = {"enabled",         "topics",           "batch_size",
                          "max_round_bytes", "poll_interval_ms", "retention_days"};

namespace {

// The relay's producer takes kafka.properties (the dead-letter producer's), so
// its message.max.bytes is the limit an emit is checked against. A value that
// is not a number is left to librdkafka, which refuses it when the daemon starts.
std::size_t producer_max_message_bytes(const KafkaConfig& kafka) {
    const auto it = kafka.properties.find("message.max.bytes");
    if (it == kafka.properties.end()) return kDefaultMaxMessageBytes;
    std::size_t bytes = 0;
    const auto& text = it->second;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bytes);
    if (error != std::errc() || end != text.data() + text.size()) return kDefaultMaxMessageBytes;
    return bytes;
}

}  // namespace

OutboxConfig read_outbox(const Reader& outbox, const KafkaConfig& kafka) {
    OutboxConfig out;
    outbox.read("enabled", out.enabled, kSwitch);
    // One produce and one UPDATE of this many rows per round; the relay holds
    // their row locks while Kafka acknowledges them.
    outbox.read("batch_size", out.batch_size, Bounds{1, 10000});
    // What a round holds in memory (the values, read once) and hands librdkafka.
    int round_bytes = static_cast<int>(out.max_round_bytes);
    outbox.read("max_round_bytes", round_bytes, Bounds{1, 1024LL * 1024 * 1024});
    out.max_round_bytes = static_cast<std::size_t>(round_bytes);
    outbox.read("poll_interval_ms", out.poll_interval, kPositiveMs);
    outbox.read_days("retention_days", out.retention, Bounds{0, kMaxDays});
    out.emit_limits = EmitLimits(producer_max_message_bytes(kafka));
    std::map<std::string, int> first_line;  // topic name -> line declaring it
    for (const Item& item : outbox.list("topics")) {
        const auto topic =
            scalar_text(outbox.context(), item.node, item.path, item.line, "a topic name");
        if (!topic) continue;
        if (auto problem = topic_name_problem(*topic)) {
            outbox.context().add(item.path, item.line, std::move(*problem));
            continue;
        }
        if (const auto [it, added] = first_line.emplace(*topic, item.line); !added) {
            outbox.context().add(item.path, item.line,
                                 "topic " + in_quotes(*topic) + " is already listed at line " +
                                     std::to_string(it->second) + ": list each topic once");
            continue;
        }
        out.topics.push_back(*topic);
    }
    return out;
}

}  // namespace exo::config_reading
