#include "protocol/produced_topics.hpp"

#include <set>

#include "kafka/kafka_names.hpp"

namespace exo {

std::vector<ProducedTopic> produced_topics(const Config& config) {
    std::vector<ProducedTopic> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < config.bindings.size(); ++i) {
        const auto& b = config.bindings[i];
        if (!seen.insert(b.dead_letter_topic).second) continue;
        const bool by_default = b.dead_letter_topic == b.topic + ".dlq";
        out.push_back({b.dead_letter_topic, "bindings[" + std::to_string(i) +
                                                "].dead_letter_topic" +
                                                (by_default ? ", not set: <topic>.dlq" : "") +
                                                ", the dead letters of '" + b.topic + "'"});
    }
    for (std::size_t i = 0; i < config.outbox.topics.size(); ++i) {
        const auto& t = config.outbox.topics[i];
        if (seen.insert(t).second)
            out.push_back({t, "outbox.topics[" + std::to_string(i) + "], emitted records"});
    }
    return out;
}

std::string missing_topics_problem(const std::vector<ProducedTopic>& topics,
                                   const TopicInspection& seen) {
    // Not told (DescribeConfigs refused: ACLs, librdkafka's mock cluster, which creates topics
    // on first use): a missing topic may well be created when used, so no wait; the caller
    // warns instead (missing_topics_warning).
    if (seen.auto_create.value_or(true)) return {};
    std::string missing;
    for (const auto& t : topics) {
        const auto it = seen.topics.find(t.topic);
        if (it != seen.topics.end() && it->second.exists) continue;
        missing += (missing.empty() ? "" : ", ") + ("'" + t.topic + "' (" + t.named_by + ")");
    }
    if (missing.empty()) return {};
    return "Kafka topic(s) exo produces to do not exist: " + missing + ". Create them (exo " +
           (seen.auto_create ? "creates no topics, and the brokers' auto.create.topics.enable is "
                               "false"
                             : "creates no topics") +
           "), or correct the config key naming them";
}

std::string missing_topics_warning(const std::vector<ProducedTopic>& topics,
                                   const TopicInspection& seen) {
    if (seen.auto_create) return {};
    TopicInspection told = seen;
    told.auto_create = false;
    const auto problem = missing_topics_problem(topics, told);
    if (problem.empty()) return {};
    return problem +
           "; the brokers did not say whether they create topics on first use "
           "(auto.create.topics.enable), so exo goes on and meets a missing topic when it first "
           "produces to it";
}

void learn_topic_limits(EmitLimits& limits, const TopicInspection& seen,
                        const std::vector<std::string>& emitted_to) {
    for (const auto& topic : emitted_to)
        if (const auto it = seen.topics.find(topic);
            it != seen.topics.end() && it->second.max_message_bytes)
            limits.set_topic_bytes(topic, *it->second.max_message_bytes);
}

ProducerOptions topic_check_client(const std::string& bootstrap, const KafkaConfig& kafka) {
    ProducerOptions options{bootstrap, {}};
    for (const auto& [name, value] : kafka.properties)
        if (!is_consumer_only_property(name)) options.properties.emplace(name, value);
    return options;
}

}  // namespace exo
