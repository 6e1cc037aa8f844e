#pragma once
// The topics exo produces to that the config names (each binding's dead-letter topic, and
// outbox.topics), and what the brokers' answer about them means at start-up. Pure: `exo
// run` asks the brokers (kafka/topic_inspection.hpp) and waits, not ready, until none is
// missing; the unit tests check every decision.
//
// Why wait and not exit: a missing input topic leaves the daemon running and not ready
// until the topic appears (the consumer reports it), and an unreachable PostgreSQL is waited
// for; topics are often created by another deployment step that may come second. Waiting
// before the consumer joins keeps a misconfigured member from taking partitions from the
// group's healthy members, whose first poison record or emit would otherwise find the
// topic missing.
#include <string>
#include <vector>

#include <exo/outbox.hpp>
#include "config/config.hpp"
#include "kafka/producer.hpp"
#include "kafka/topic_inspection.hpp"

namespace exo {

struct ProducedTopic {
    std::string topic;
    // The config key that names it, for the message: "bindings[0].dead_letter_topic
    // (default: <topic>.dlq)", "outbox.topics[1]".
    std::string named_by;
};

// Every topic the config makes exo produce to, once each, in config order: the bindings'
// dead-letter topics, then outbox.topics.
std::vector<ProducedTopic> produced_topics(const Config& config);

// The error to log while some of `topics` do not exist, naming each with its config key and
// the fix; empty when none is missing, or when the brokers create topics on first use
// (auto.create.topics.enable true).
std::string missing_topics_problem(const std::vector<ProducedTopic>& topics,
                                   const TopicInspection& seen);

// The missing topics of `topics` when the brokers did not say whether they create topics on
// first use (seen.auto_create unknown), as a warning to log; "" when none is missing or the
// brokers told. missing_topics_problem() does not wait for those.
std::string missing_topics_warning(const std::vector<ProducedTopic>& topics,
                                   const TopicInspection& seen);

// `limits` with the max.message.bytes the brokers told of each of `emitted_to`
// (outbox.topics): the limits of emit()'s check and of the relay's batches. A
// dead-letter topic's is not needed: a dead letter over it goes without its value.
void learn_topic_limits(EmitLimits& limits, const TopicInspection& seen,
                        const std::vector<std::string>& emitted_to);

// The client the check asks the brokers with: the producers' properties (security settings),
// without the consumer-only ones.
ProducerOptions topic_check_client(const std::string& bootstrap, const KafkaConfig& kafka);

}  // namespace exo
