#include "app/operator_setup.hpp"

#include "app/config_loading.hpp"
#include "kafka/kafka_names.hpp"
#include "runtime/sessions/redis_session.hpp"

namespace exo {

std::string operator_bootstrap(const Config& config) {
    if (!config.kafka.mock) return config.kafka.bootstrap_servers;
    if (config.kafka.mock->bootstrap_file.empty())
        throw UsageError(
            "this config runs an embedded mock Kafka cluster inside `exo run`, which no other "
            "process can reach: set kafka.mock.bootstrap_file, restart the daemon, and run this "
            "command with the same config");
    return read_bootstrap_file(config.kafka.mock->bootstrap_file);
}

RedisOptions operator_redis(const RedisConfig& rc) {
    return redis_options(rc);
}

ProducerOptions operator_producer(const std::string& bootstrap, const KafkaConfig& kafka) {
    ProducerOptions options{bootstrap, {}};
    for (const auto& [name, value] : kafka.properties)
        if (!is_consumer_only_property(name)) options.properties.emplace(name, value);
    return options;
}

}  // namespace exo
