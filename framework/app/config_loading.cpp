#include "app/config_loading.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "app/logging_setup.hpp"
#include "config/config_parser.hpp"
#include "config/config_secrets.hpp"

namespace exo {

Config load_config(const std::string& path, const HandlerRegistry& registry, ErrorOutput& errors) {
    Config config = parse_config_file(path, registry.names());
    errors.use(config_redactor(config));
    configure_logging(config.logging, config_redactor(config));
    return config;
}

int run_with_config(const std::string& path, const HandlerRegistry& registry, ErrorOutput& errors,
                    const std::function<int(Config&)>& body) {
    Config config = load_config(path, registry, errors);
    return body(config);
}

KafkaEndpoint::KafkaEndpoint(const Config& config) {
    if (!config.kafka.mock) {
        bootstrap_ = config.kafka.bootstrap_servers;
        return;
    }
    const auto& m = *config.kafka.mock;
    mock_ = std::make_unique<MockCluster>(m.brokers);
    std::set<std::string> created;
    for (const auto& t : m.topics) {
        mock_->create_topic(t.name, t.partitions);
        created.insert(t.name);
    }
    for (const auto& b : config.bindings)
        for (const auto& topic : {b.topic, b.dead_letter_topic})
            if (created.insert(topic).second) mock_->create_topic(topic, 1);
    for (const auto& topic : config.outbox.topics)
        if (created.insert(topic).second) mock_->create_topic(topic, 1);
    bootstrap_ = mock_->bootstrap_servers();
    spdlog::info("embedded mock Kafka cluster ({} broker(s)) at {}", m.brokers, bootstrap_);
    if (!m.bootstrap_file.empty()) {
        std::string tmp = m.bootstrap_file + ".tmp";
        std::ofstream(tmp) << bootstrap_ << "\n";
        if (std::rename(tmp.c_str(), m.bootstrap_file.c_str()) != 0)
            throw std::runtime_error("cannot write kafka.mock.bootstrap_file " + m.bootstrap_file);
    }
}

std::string read_bootstrap_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw UsageError("cannot read bootstrap file " + path);
    std::string s;
    std::getline(in, s);
    if (s.empty()) throw UsageError("bootstrap file " + path + " is empty");
    return s;
}

}  // namespace exo
