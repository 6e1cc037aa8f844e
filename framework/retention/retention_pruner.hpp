#pragma once
// Deletes what exo keeps only for a while (docs/design.md#retention): this
// group's dedup rows, strict-sequence gap sightings and finished replay tickets
// past postgres.dedup_retention, sent outbox rows written longer than
// outbox.retention ago, and the seq counters of idle outbox units that have no
// pending row left. Its own thread and PostgreSQL session, so pruning never
// delays a batch or the outbox relay.
//
// A pass deletes chunk after chunk (retention.chunk_rows rows, each chunk its
// own transaction, so no row lock lasts longer than one chunk's delete), one
// chunk per table in turn, for as long as a table's chunk comes back full,
// paced to retention.max_rows_per_second (prune_throttle.hpp; the counters of
// exo_outbox_keys are swept in key order at most hourly, paced by the counters
// read). So a backlog
// is cleared at the cap, and steady expiry keeps up as long as the cap exceeds
// the rate rows are written. Once every table is caught up it sleeps
// retention.interval. A failed pass (PostgreSQL down, a lock timeout) drops the
// session and is retried with backoff; it never stops the daemon.
//
// Lifecycle: start() once, stop() (or the destructor) stops and joins; the
// daemon, the composition root, starts it beside the batch runners and stops it after
// them. Thread-safety: start() and stop() from the owning thread only.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stop_token>
#include <thread>

#include <pqxx/connection>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"

namespace exo {

class RetentionPruner {
public:
    // Prunes `group`'s dedup rows older than postgres.dedup_retention and outbox rows
    // older than `outbox_retention` (outbox.retention), at the pace of `retention`,
    // on connections to `postgres`. The sections outlive the pruner.
    RetentionPruner(const RetentionConfig& retention, const PostgresConfig& postgres,
                    std::chrono::hours outbox_retention, std::string group, PipelineStats& stats);
    RetentionPruner(const RetentionPruner&) = delete;
    RetentionPruner& operator=(const RetentionPruner&) = delete;
    ~RetentionPruner();

    void start();
    void stop();

    // One pass on `connection` (not in a transaction) until every table is
    // caught up or `stop` is requested; returns the rows deleted. Throws pqxx
    // errors (the chunks committed before stay deleted).
    std::size_t prune_until_caught_up(pqxx::connection& connection, const std::stop_token& stop);

private:
    void run(std::stop_token stop);
    void update_lag(pqxx::connection& connection);
    // Sleeps until `until` or a stop; false when stopped.
    bool sleep_until(std::chrono::steady_clock::time_point until, const std::stop_token& stop);

    const RetentionConfig& retention_;
    const PostgresConfig& postgres_;
    const std::chrono::hours outbox_retention_;
    const std::string group_;
    PipelineStats& stats_;
    // The counters of exo_outbox_keys are swept whole at most hourly (from the
    // first pass on); the pruner's thread only.
    std::chrono::steady_clock::time_point next_key_sweep_{};
    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace exo
