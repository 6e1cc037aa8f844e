#pragma once
// The hand-written inbox consumer (bench/inbox_peer/inbox_peer.js: kafkajs and
// node-postgres, one transaction per fetched partition batch, no Redis) run as
// exo_bench's peer on the same workload, mock cluster and PostgreSQL as the exo
// scenarios: the alternative a team weighs exo against (issue "Throughput").
//
// Needs `node` on PATH and the peer's packages installed (scripts/bench.sh runs
// `npm ci` in bench/inbox_peer). The peer's own clock (from its first poll
// setup to the commit of the last record) is the scenario's time; its
// exactly-once check is the exo scenarios' one with the peer's inbox table in
// place of exo_processed.
#include "bench_world.hpp"
#include "scenario_result.hpp"

namespace exo::bench {

// Failures (node missing, the peer failing, a wrong result) are reported in
// ScenarioResult::failure.
ScenarioResult run_inbox_peer(BenchWorld& world, const Isolation& iso, const TopicWorkload& w,
                              const BenchOptions& options);

}  // namespace exo::bench
