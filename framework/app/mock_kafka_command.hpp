#pragma once
// `exo mock-kafka`: librdkafka's mock cluster as a standalone broker for the
// demo and the integration tests (the CLI parsing and signal wiring live in cli).
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace exo {

// Starts a mock cluster of `brokers` brokers, creates `topics` (name,
// partitions), writes the bootstrap servers to `bootstrap_file` (atomically:
// a temporary file renamed into place; skipped when empty) and blocks until
// `stop` is requested; then removes the bootstrap file (its ports are gone) and
// returns 0. Throws UsageError for bad arguments or an unwritable file,
// KafkaError if the cluster or a topic cannot be created.
int run_mock_kafka(int brokers, const std::vector<std::pair<std::string, int>>& topics,
                   const std::string& bootstrap_file, std::stop_token stop);

}  // namespace exo
