#pragma once
// What one run of one scenario measured. NaN (or an empty list) means "not
// measured"; the report prints n/a for it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "measure.hpp"
#include "metrics/pipeline_stats.hpp"
#include "pg_costs.hpp"

namespace exo::bench {

constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// PipelineStats copied into plain numbers.
struct StatsCopy {
    std::uint64_t polled = 0, applied = 0, duplicates_redis = 0, duplicates_postgres = 0,
                  duplicates_in_batch = 0, stale = 0, conflicts = 0, retries = 0, dead_lettered = 0,
                  batches = 0, transactions = 0, batch_failures = 0, redis_round_trips = 0,
                  postgres_round_trips = 0;
    static StatsCopy of(const PipelineStats& s);
};

struct ScenarioResult {
    std::string name;
    std::size_t records = 0;
    std::string failure;  // empty: completed and the exactly-once check passed

    double seconds_to_finished = kNotMeasured;   // first poll -> every record finished
    double seconds_to_committed = kNotMeasured;  // first poll -> group lag 0
    // Emitting runs: first poll -> the outbox relay published every emit (nothing unsent).
    double seconds_to_published = kNotMeasured;
    double redis_round_trips = kNotMeasured;  // totals, divided by records in the report
    // Counted at libpq (pg_round_trips.hpp) over the measured window.
    double postgres_round_trips = kNotMeasured;
    // What the code under test says it sent: PipelineStats::postgres_round_trips, or
    // the bare scenario's own count.
    double postgres_round_trips_reported = kNotMeasured;
    StatsCopy stats;

    MemoryReading memory_before;  // when the scenario started (after its reset_peak_rss)
    long peak_rss_kb = 0;         // VmHWM at its end: the peak during the scenario
    long rss_at_half_kb = 0;      // VmRSS when half the records had finished
    long rss_at_end_kb = 0;       // VmRSS when all had finished
    CpuUsage cpu;                 // first poll -> every record finished
    // --pg-costs: what the run cost PostgreSQL per record (pg_cost_probe.hpp).
    std::optional<PgCosts> pg_costs;

    // PipelineStats::latency (poll -> durable outcome, buckets 15% wide), pipeline scenarios.
    double poll_to_durable_p50_ms = kNotMeasured;
    double poll_to_durable_p99_ms = kNotMeasured;

    // Paced runs only.
    double offered_rate = kNotMeasured;      // records/s the producer aimed at
    double produced_rate = kNotMeasured;     // records/s it achieved
    std::vector<double> commit_latency_ms;   // produce -> PostgreSQL commit, per applied event
    std::vector<double> handler_latency_ms;  // produce -> handler start (first attempt)
    // What handler_latency_ms times to: exo's handler start (inside its transaction, after
    // the framework's dedup statements), or the plain consumer's poll return.
    std::string handler_point = "handler start, first attempt";
    double warm_up_s = 1;      // produced before this (after the first produce): not in percentiles
    std::string latency_note;  // why commit latency is missing, if it is
    // (seconds after the first produce, produce -> commit ms) per applied event, by time.
    std::vector<std::pair<double, double>> commit_trace;

    // When the run was done: the last offset commit, or for an emitting run the later of
    // that and the last emit published.
    double seconds_to_done() const {
        return std::isnan(seconds_to_published)
                   ? seconds_to_committed
                   : std::max(seconds_to_committed, seconds_to_published);
    }
    double records_per_s() const { return static_cast<double>(records) / seconds_to_done(); }
    double records_per_s_finished() const {
        return static_cast<double>(records) / seconds_to_finished;
    }
};

}  // namespace exo::bench
