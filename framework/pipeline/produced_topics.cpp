#include "pipeline/produced_topics.hpp"

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
    if (seen.auto_create.value_or(false)) return {};
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
