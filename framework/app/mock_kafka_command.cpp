#include "app/mock_kafka_command.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <exo/errors.hpp>
#include "kafka/mock_cluster.hpp"

namespace exo {
namespace {

// Readers poll for the file, so it must appear complete or not at all.
void write_atomically(const std::string& path, const std::string& contents) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << contents << '\n';
        out.flush();
        if (!out)
            throw UsageError("mock-kafka: cannot write the bootstrap file '" + tmp +
                             "': " + std::strerror(errno) + "; check --bootstrap-file");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw UsageError("mock-kafka: cannot move the bootstrap file into place at '" + path +
                         "': " + ec.message() + "; check --bootstrap-file");
    }
}

}  // namespace

int run_mock_kafka(int brokers, const std::vector<std::pair<std::string, int>>& topics,
                   const std::string& bootstrap_file, std::stop_token stop) {
    if (brokers < 1)
        throw UsageError("mock-kafka: --brokers must be at least 1 (got " +
                         std::to_string(brokers) + ")");
    for (const auto& [name, partitions] : topics) {
        if (name.empty()) throw UsageError("mock-kafka: a --topic has an empty name");
        if (partitions < 1)
            throw UsageError("mock-kafka: topic '" + name + "' needs at least 1 partition (got " +
                             std::to_string(partitions) + ")");
    }

    MockCluster cluster(brokers);
    std::string created;
    for (const auto& [name, partitions] : topics) {
        cluster.create_topic(name, partitions);
        created += (created.empty() ? "" : ", ") + name + "(" + std::to_string(partitions) + ")";
    }
    if (!bootstrap_file.empty()) write_atomically(bootstrap_file, cluster.bootstrap_servers());
    spdlog::info("mock Kafka cluster with {} broker(s) listening on {}; topics: {}", brokers,
                 cluster.bootstrap_servers(), created.empty() ? "(none)" : created);

    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    // Nothing else signals this variable: only a stop request ends the wait.
    wake.wait(lock, stop, [] { return false; });

    spdlog::info("mock Kafka cluster on {} stopping", cluster.bootstrap_servers());
    if (!bootstrap_file.empty()) {
        std::error_code ec;
        std::filesystem::remove(bootstrap_file, ec);  // its ports are about to close
    }
    return 0;
}

}  // namespace exo
