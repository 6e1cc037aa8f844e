#pragma once
// What the operator commands (`exo inspect`, `exo dlq ...`) open from a config:
// the same servers and settings as the daemon, but as short-lived clients of
// their own (no consumer group, no claims taken).
#include <map>
#include <string>

#include "config/config.hpp"
#include "kafka/producer.hpp"
#include "redis/redis_connection.hpp"

namespace exo {

// The brokers: kafka.bootstrap_servers, or for an embedded mock cluster (which
// lives inside `exo run`) the address the daemon wrote to
// kafka.mock.bootstrap_file. Throws UsageError if there is no way to reach it.
std::string operator_bootstrap(const Config& config);

RedisOptions operator_redis(const RedisConfig& redis);

// The consumer's properties (security settings) without the consumer-only ones.
ProducerOptions operator_producer(const std::string& bootstrap, const KafkaConfig& kafka);

}  // namespace exo
