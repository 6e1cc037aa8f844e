// outbox: the relay that publishes the records handlers emit (docs/outbox.md).
#include <charconv>
#include <map>

#include "config/sections.hpp"
#include "core/text.hpp"
#include "kafka/kafka_names.hpp"

namespace exo::config_reading {

const Choices<bool> kSwitch = {{"true", true}, {"false", false}};

}  // namespace exo::config_reading

namespace exo::config_schema {
namespace {

using config_reading::Item;
using config_reading::kMaxDays;
using config_reading::kPositiveMs;
using O = OutboxConfig;

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

void read_topics(const Reader& outbox, OutboxConfig& out) {
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
}

void print_topics(YAML::Emitter& e, const OutboxConfig& o, const Config&) {
    e << YAML::Key << "topics" << YAML::Value << YAML::BeginSeq;
    for (const auto& t : o.topics) e << YAML::DoubleQuoted << yaml_writer::literal(t);
    e << YAML::EndSeq;
}

}  // namespace

EmitLimits outbox_emit_limits(const KafkaConfig& kafka) {
    return EmitLimits(producer_max_message_bytes(kafka));
}

const Section<OutboxConfig>& outbox_section() {
    static const Section<OutboxConfig> section(
        "outbox",
        {
            toggle(
                "enabled", &O::enabled,
                R"md(run an outbox relay in this daemon (every daemon may; they share the rows))md"),
            custom<O>(
                "topics", read_topics, print_topics, "[]",
                R"md(the topics handlers emit to. At start-up each must exist (`exo run` waits, not ready, naming the missing ones, until they do; not checked when the brokers auto-create topics, only warned about when they do not say), and its `max.message.bytes` is read from the brokers: an emit whose size in a batch of its own (`outbox_wire_size` + 61) is over it is refused at `emit()`, and the relay's `batch.size` is kept under the smallest. An emit to a topic not listed is checked against the producer's `message.max.bytes` only)md"),
            // One produce and one UPDATE of this many rows per round; the relay holds
            // their row locks while Kafka acknowledges them.
            number(
                "batch_size", &O::batch_size, Bounds{1, 10000},
                R"md(rows per relay round at most (claimed, produced, acknowledged and marked together); 1–10000. Each round costs a few statements and one wait for Kafka's acknowledgements, so a small value makes the relay fall behind a pipeline that emits (at 500 it published 2,961 rows/s where the pipeline wrote 4,456; at 2,000 it kept up))md"),
            // What a round holds in memory (the values, read once) and hands librdkafka.
            bytes(
                "max_round_bytes", &O::max_round_bytes, Bounds{1, 1024LL * 1024 * 1024},
                R"md(bytes of keys, values and headers per relay round at most (what the relay holds in memory and hands librdkafka); a round always takes at least one row; 1–1073741824)md"),
            ms("poll_interval_ms", &O::poll_interval, kPositiveMs,
               R"md(longest sleep between rounds: how long rows committed by another daemon (whose own relay is down or behind, or `outbox.enabled: false`) wait at most (a commit of this daemon that emitted wakes its relay at once))md"),
            days(
                "retention_days", &O::retention, Bounds{0, kMaxDays},
                R"md(sent rows are kept this long after they were written, then pruned (`retention` below); 0: deleted as soon as they are published. Key counters (`exo_outbox_keys`) of units with no pending row left go once unused this long, and at least an hour)md"),
        });
    return section;
}

}  // namespace exo::config_schema
