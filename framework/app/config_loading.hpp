#pragma once
// The composition root's helpers: one place that turns a config file into a
// running setup (handlers registered, config parsed, logging set, embedded
// Kafka started).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "kafka/mock_cluster.hpp"
#include "pipeline/handler_registry.hpp"

namespace exo {

// Parses FILE (throws ConfigError, a UsageError) and sets up logging from it
// (app/logging_setup.hpp: level, format, secrets redacted, repeats limited).
Config load_config(const std::string& path, const HandlerRegistry& registry);

// load_config(path), then `body` with the config; returns what body returns.
// What body throws is rethrown with the config's secrets masked in its message
// (a UsageError as a UsageError, anything else as std::runtime_error), so the
// error the command line prints never quotes one (a libpq error quoting part of
// the conninfo, librdkafka refusing a property value).
int run_with_config(const std::string& path, const HandlerRegistry& registry,
                    const std::function<int(Config&)>& body);
// Inside a catch block: rethrows the exception being handled with `config`'s
// secrets masked in its message, as run_with_config does. Something that is
// not a std::exception is rethrown as it is.
[[noreturn]] void rethrow_with_secrets_masked(const Config& config);

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
