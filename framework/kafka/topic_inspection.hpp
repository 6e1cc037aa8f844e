#pragma once
// What the brokers say about the topics exo produces to (dead letters, emitted records),
// asked once at start-up: whether each exists, how large a record batch it takes, and
// whether the brokers would create a missing one on first use. Two admin requests: a
// Metadata request for every topic (which never creates one, whatever
// allow.auto.create.topics says) and one DescribeConfigs for the topics found and for the
// answering broker.
//
// Thread-safety: a free function with its own client; call it from any thread.
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kafka/producer.hpp"

namespace exo {

struct TopicFacts {
    bool exists = false;
    // The topic's max.message.bytes (its own setting, else the broker's message.max.bytes);
    // nullopt when the brokers did not tell it (see limits_unknown).
    std::optional<std::size_t> max_message_bytes;
};

struct TopicInspection {
    std::map<std::string, TopicFacts> topics;  // every topic asked about
    // The broker's auto.create.topics.enable; nullopt when it did not tell (no
    // DescribeConfigs right on the cluster, or a broker that does not answer it, as
    // librdkafka's mock cluster).
    std::optional<bool> auto_create;
    // Why some limits or auto_create are unknown (empty when everything was told):
    // an error the caller logs; the check goes on without them.
    std::string limits_unknown;
};

// Asks the brokers of `client` (its bootstrap servers and security properties) about
// `topics`. Throws KafkaError when the metadata cannot be read within `timeout` (brokers
// unreachable, authentication refused): the caller retries later. A DescribeConfigs that
// fails (authorization, an old or mock broker) does not throw: limits_unknown says why.
TopicInspection inspect_topics(const ProducerOptions& client,
                               const std::vector<std::string>& topics,
                               std::chrono::milliseconds timeout);

}  // namespace exo
