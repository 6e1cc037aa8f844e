// kafka: the brokers (or the embedded mock cluster), the consumer group and the
// librdkafka properties passed through.
#include <charconv>
#include <map>

#include "config/sections.hpp"
#include "core/text.hpp"
#include "kafka/kafka_names.hpp"

namespace exo::config_reading {

const Keys kKafkaKeys = {"bootstrap_servers", "mock", "group_id", "commit_interval_ms",
                         "properties"};

namespace {

const Keys kMockKeys = {"brokers", "topics", "bootstrap_file"};

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

MockKafkaConfig read_mock(const Reader& mock) {
    MockKafkaConfig out;
    mock.read("brokers", out.brokers, kPositive);
    mock.read("bootstrap_file", out.bootstrap_file, Text::non_empty);
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
    return out;
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

}  // namespace

KafkaConfig read_kafka(const Reader& kafka) {
    KafkaConfig out;
    kafka.read("bootstrap_servers", out.bootstrap_servers, Text::non_empty);
    if (kafka.has("mock")) out.mock = read_mock(kafka.map("mock", kMockKeys));
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
    if (kafka.require("group_id", "name the consumer group, e.g. group_id: exo-ledger")) {
        kafka.read("group_id", out.group_id, Text::non_empty);
        // The group is part of every dedup row's primary key (with a key of up to
        // kMaxStoredKeyBytes): it must be text PostgreSQL stores, short enough for
        // the index.
        if (!is_postgres_text(out.group_id))
            kafka.problem("group_id", "must be valid UTF-8 without NUL characters");
        else if (out.group_id.size() > kMaxGroupIdBytes)
            kafka.problem("group_id", "is " + std::to_string(out.group_id.size()) +
                                          " bytes; at most " + std::to_string(kMaxGroupIdBytes) +
                                          " fit beside an idempotency key in the dedup index");
    }
    kafka.read("commit_interval_ms", out.commit_interval, kPositiveMs);
    out.properties = read_properties(kafka.map("properties", std::nullopt));
    return out;
}

}  // namespace exo::config_reading
