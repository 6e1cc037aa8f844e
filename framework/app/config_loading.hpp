#pragma once
// The composition root's helpers: one place that turns a config file into a
// running setup (handlers registered, config parsed, logging set, embedded
// Kafka started).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "app/error_output.hpp"
#include "config/config.hpp"
#include "kafka/mock_cluster.hpp"
#include "protocol/handler_registry.hpp"

namespace exo {

// Parses FILE (throws ConfigError, a UsageError), sets up logging from it
// (app/logging_setup.hpp: level, format, secrets redacted, repeats limited) and
// gives `errors` its secrets, so the error the command line prints never quotes
// one (a libpq error quoting part of the conninfo, librdkafka refusing a
// property value). Every command reads its config here: none can forget that.
Config load_config(const std::string& path, const HandlerRegistry& registry, ErrorOutput& errors);

// load_config(path), then `body` with the config; returns what body returns.
int run_with_config(const std::string& path, const HandlerRegistry& registry, ErrorOutput& errors,
                    const std::function<int(Config&)>& body);

// The Kafka the config points at: its bootstrap servers, or an embedded mock
// cluster (owned here) with the configured topics and every binding's topic and
// dead-letter topic created, its address written to mock.bootstrap_file if set.
class KafkaEndpoint {
public:
    explicit KafkaEndpoint(const Config& config);
    const std::string& bootstrap_servers() const { return bootstrap_; }

private:
    std::unique_ptr<MockCluster> mock_;
    std::string bootstrap_;
};

// Reads a bootstrap string from --bootstrap or --bootstrap-file.
std::string read_bootstrap_file(const std::string& path);

}  // namespace exo
