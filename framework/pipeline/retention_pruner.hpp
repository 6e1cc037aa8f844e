#pragma once
// Deletes dedup rows and strict-sequence gap sightings older than
// postgres.dedup_retention, a chunk of rows per transaction so no delete holds
// locks for long. Its own thread and PostgreSQL session, so pruning never
// delays a batch: at start, then every `interval`, and a minute after a failure.
//
// Lifecycle: start() once, stop() (or the destructor) stops and joins; the
// daemon, the composition root, starts it beside the workers and stops it after
// them. Failures are logged and retried; they never stop the daemon.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "config/config.hpp"
#include "pipeline/pipeline_stats.hpp"

namespace exo {

class RetentionPruner {
public:
    RetentionPruner(const PostgresConfig& config, PipelineStats& stats,
                    std::chrono::milliseconds interval = std::chrono::minutes(10));
    RetentionPruner(const RetentionPruner&) = delete;
    RetentionPruner& operator=(const RetentionPruner&) = delete;
    ~RetentionPruner();

    void start();
    void stop();

private:
    void run(std::stop_token stop);
    // One pass over both tables; returns the rows deleted. Throws pqxx errors.
    std::size_t prune_once();

    const PostgresConfig& config_;
    PipelineStats& stats_;
    std::chrono::milliseconds interval_;
    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace exo
