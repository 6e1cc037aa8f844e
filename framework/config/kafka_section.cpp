// kafka: the brokers (or the embedded mock cluster), the consumer group and the
// librdkafka properties passed through.
#include <charconv>
#include <map>

#include "config/sections.hpp"
#include "core/secrets.hpp"
#include "core/text.hpp"
#include "kafka/kafka_names.hpp"

namespace exo::config_schema {
namespace {

using config_reading::Context;
using config_reading::Item;
using config_reading::kPositive;
using config_reading::kPositiveMs;
using K = KafkaConfig;
using M = MockKafkaConfig;

// Why kafka.properties may not set `key`, or nullopt if it is the user's to set:
// the properties the consumer reserves (kafka/kafka_names.hpp), and
// bootstrap.servers, which has a key of its own.
std::optional<std::string> refused_property(std::string_view key) {
    if (key == "bootstrap.servers") return "set kafka.bootstrap_servers instead";
    if (!is_reserved_consumer_property(key)) return std::nullopt;
    if (key == "group.id") return "set kafka.group_id instead";
    if (key == "enable.auto.commit") {
        return "exo owns it (offsets are committed only once each record's outcome is durable): "
               "remove it";
    }
    if (key == "enable.auto.offset.store") {
        return "exo owns it (offsets are stored only once each record's outcome is durable): "
               "remove it";
    }
    return "exo sets it itself: remove it";
}

// "NAME:PARTITIONS", or just "NAME" for one partition.
std::optional<MockKafkaConfig::TopicSpec> read_mock_topic(Context& ctx, const Item& item) {
    const std::optional<std::string> text = scalar_text(
        ctx, item.node, item.path, item.line, "a topic as NAME:PARTITIONS (e.g. payments:4)");
    if (!text) return std::nullopt;
    const TopicSpecText written = split_topic_spec(*text);
    MockKafkaConfig::TopicSpec spec;
    spec.name = std::string(written.name);
    if (auto problem = topic_name_problem(spec.name)) {
        ctx.add(item.path, item.line, std::move(*problem));
        return std::nullopt;
    }
    if (!written.partitions) return spec;
    const std::optional<int> partitions = partition_count(*written.partitions);
    if (!partitions) {
        ctx.add(item.path, item.line,
                "the partition count after ':' must be a whole number of at least 1 (e.g. " +
                    spec.name + ":4), got " + in_quotes(*written.partitions));
        return std::nullopt;
    }
    spec.partitions = *partitions;
    return spec;
}

void read_mock_topics(const Reader& mock, MockKafkaConfig& out) {
    std::map<std::string, int> first_line;  // topic name -> line declaring it
    for (const Item& item : mock.list("topics")) {
        std::optional<MockKafkaConfig::TopicSpec> topic = read_mock_topic(mock.context(), item);
        if (!topic) continue;
        if (const auto [it, added] = first_line.emplace(topic->name, item.line); !added) {
            mock.context().add(item.path, item.line,
                               "topic " + in_quotes(topic->name) + " is already listed at line " +
                                   std::to_string(it->second) + ": list each topic once");
            continue;
        }
        out.topics.push_back(std::move(*topic));
    }
}

void print_mock_topics(YAML::Emitter& e, const MockKafkaConfig& m, const Config&) {
    e << YAML::Key << "topics" << YAML::Value << YAML::BeginSeq;
    for (const auto& t : m.topics)
        e << YAML::DoubleQuoted
          << yaml_writer::literal(t.name + ":" + std::to_string(t.partitions));
    e << YAML::EndSeq;
}

std::map<std::string, std::string> read_properties(const Reader& properties) {
    std::map<std::string, std::string> out;
    properties.for_each([&](const std::string& key, const YAML::Node& value, int line) {
        const std::string path = properties.path_of(key);
        if (const auto why = refused_property(key)) {
            properties.context().add(path, line,
                                     "property " + in_quotes(key) + " is refused: " + *why);
            return;
        }
        if (auto text = scalar_text(properties.context(), value, path, line,
                                    "a string, number or boolean")) {
            out[key] = std::move(*text);
        }
    });
    return out;
}

void read_properties_key(const Reader& kafka, KafkaConfig& out) {
    out.properties = read_properties(kafka.map("properties", std::nullopt));
}

void print_properties(YAML::Emitter& e, const KafkaConfig& k, const Config&) {
    yaml_writer::begin_map(e, "properties", k.properties.empty());
    for (const auto& [key, value] : k.properties)
        yaml_writer::text(e, key,
                          is_secret_key(key) ? yaml_writer::secret(value) : mask_uri(value));
    yaml_writer::end_map(e);
}

void read_mock(const Reader& kafka, KafkaConfig& out) {
    const Section<MockKafkaConfig>& mock = kafka_mock_section();
    out.mock = mock.read(kafka.map("mock", mock.names()));
}

void print_mock(YAML::Emitter& e, const KafkaConfig& k, const Config& config) {
    kafka_mock_section().print_as(e, "mock", *k.mock, config);
}

// The group is part of every dedup row's primary key (with a key of up to
// kMaxStoredKeyBytes): it must be text PostgreSQL stores, short enough for the index.
std::optional<std::string> storable_group(const KafkaConfig& k) {
    if (!is_postgres_text(k.group_id)) return "must be valid UTF-8 without NUL characters";
    if (k.group_id.size() > kMaxGroupIdBytes)
        return "is " + std::to_string(k.group_id.size()) + " bytes; at most " +
               std::to_string(kMaxGroupIdBytes) +
               " fit beside an idempotency key in the dedup index";
    return std::nullopt;
}

// Exactly one of bootstrap_servers and mock.
void validate_kafka(const Reader& kafka, KafkaConfig&) {
    if (kafka.has("bootstrap_servers") && kafka.has("mock")) {
        kafka.problem(
            "mock",
            "both bootstrap_servers and mock are given: keep bootstrap_servers for real brokers, "
            "or mock for the embedded test cluster");
    } else if (kafka.is_map() && !kafka.has("bootstrap_servers") && !kafka.has("mock")) {
        kafka.problem(
            "bootstrap_servers",
            "required key is missing: give the brokers (bootstrap_servers: \"host:9092\"), or "
            "mock: { topics: [\"payments:4\"] } for the embedded test cluster");
    }
}

bool without_mock(const Config&, const KafkaConfig& k) {
    return !k.mock;
}

}  // namespace

const Section<MockKafkaConfig>& kafka_mock_section() {
    static const Section<MockKafkaConfig> section(
        "mock",
        {
            number("brokers", &M::brokers, kPositive, R"md(brokers of the mock cluster)md"),
            custom<M>(
                "topics", read_mock_topics, print_mock_topics, "[]",
                R"md(topics to create, `"NAME:PARTITIONS"`; every binding's topic and DLQ topic, and each of `outbox.topics`, are created too)md"),
            text("bootstrap_file", &M::bootstrap_file, Text::non_empty,
                 R"md(write the mock cluster's address here (for producers))md")
                .printed_if([](const Config&, const M& m) { return !m.bootstrap_file.empty(); })
                .default_is("—"),
        });
    return section;
}

const Section<KafkaConfig>& kafka_section() {
    static const Section<KafkaConfig> section(
        "kafka",
        {
            text("bootstrap_servers", &K::bootstrap_servers, Text::non_empty,
                 R"md(brokers; required unless `kafka.mock` is given (not both))md")
                .printed_if(without_mock)
                .default_is("—"),
            custom<K>(
                "mock", read_mock, print_mock, "absent",
                R"md(run librdkafka's mock cluster inside the daemon instead of brokers (demo, tests): the keys `kafka.mock.*` below)md")
                .printed_if([](const Config&, const K& k) { return k.mock.has_value(); })
                .nesting(kafka_mock_section()),
            text("group_id", &K::group_id, Text::non_empty,
                 R"md(consumer group. Exactly-once is per group)md")
                .required("name the consumer group, e.g. group_id: exo-ledger")
                .checked(storable_group),
            ms("commit_interval_ms", &K::commit_interval, kPositiveMs,
               R"md(how often finished offsets are committed (asynchronously: no record waits for the broker's answer; on revoke and shutdown synchronously); also once as soon as every record polled has finished (at most ten times an interval), so a caught-up consumer's lag reads 0 at once)md"),
            custom<K>(
                "properties", read_properties_key, print_properties, "{}",
                R"md(extra librdkafka properties (e.g. `session.timeout.ms`, `partition.assignment.strategy: cooperative-sticky`, `security.protocol`). `group.id`, `bootstrap.servers`, `enable.auto.commit` and `enable.auto.offset.store` are exo's and refused. Secrets among them are masked in `check-config --print`)md"),
        },
        validate_kafka);
    return section;
}

}  // namespace exo::config_schema
