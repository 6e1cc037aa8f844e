#pragma once
// The latency runs' two halves, shared by exo-paced and inbox-peer-paced: produce a
// workload at a fixed rate while the consumer under test runs, then read when
// PostgreSQL committed each event's ledger row (pg_xact_commit_timestamp, which needs
// track_commit_timestamp = on: scripts/bench.sh sets it) and subtract when it was produced.
#include <cstdint>
#include <vector>

#include "bench_world.hpp"
#include "scenario_result.hpp"

namespace exo::bench {

struct PacedSend {
    // Wall-clock microseconds each message of the workload was produced, by index.
    // Allocated before the first send, so the run's memory does not grow with it.
    std::vector<std::int64_t> sent_us;
    double achieved_rate = 0;  // records/s
    std::int64_t first_us() const { return sent_us.empty() ? 0 : sent_us.front(); }
};

// Produces `w` at `rate` records/s (librdkafka linger 5 ms, part of the measured latency).
// Throws KafkaError when the producer cannot be created.
PacedSend produce_paced(const std::string& bootstrap, const TopicWorkload& w, double rate);

// Fills r.commit_latency_ms (events produced after `warm_up_s`) and r.commit_trace (all)
// from the ledger rows in `iso`'s schema, or r.latency_note when they cannot be told.
void commit_latencies(const Isolation& iso, const TopicWorkload& w, const PacedSend& sent,
                      double warm_up_s, ScenarioResult& r);

}  // namespace exo::bench
