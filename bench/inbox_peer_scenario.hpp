#pragma once
// The hand-written inbox consumer (bench/inbox_peer/inbox_peer.js: kafkajs and
// node-postgres, one transaction per fetched partition batch, no Redis) run as
// exo_bench's peer on the same workload, mock cluster and PostgreSQL as the exo
// scenarios: the alternative a team weighs exo against (issue "Throughput").
//
// Needs `node` on PATH and the peer's packages installed (scripts/bench.sh runs
// `npm ci` in bench/inbox_peer). Max rate (inbox-peer): the topic is filled
// before; the peer's own clock (from its first fetched batch to the commit of the
// last record) is the scenario's time. Paced (inbox-peer-paced): once the peer
// says its group is joined, the workload is produced at `paced_rate` and the
// latency is read as exo-paced's (produce -> PostgreSQL commit of the ledger row,
// paced_producer.hpp). Either way its exactly-once check is the exo scenarios' one
// with the peer's inbox table in place of exo_processed.
#include "bench_world.hpp"
#include "measure.hpp"
#include "scenario_result.hpp"

namespace exo::bench {

// Failures (node missing, the peer failing, a wrong result) are reported in
// ScenarioResult::failure. `paced_rate` > 0: produce `w` during the run at that rate,
// events produced in the first `warm_up_seconds` left out of the percentiles. CPU is
// measured as for exo's scenarios, from the peer's "ready" to its exit: the node
// process as the role "node", PostgreSQL's and Redis's processes from `servers`.
ScenarioResult run_inbox_peer(BenchWorld& world, const Isolation& iso, const TopicWorkload& w,
                              const BenchOptions& options, const ServerProcesses& servers,
                              const std::string& name = "inbox-peer", double paced_rate = 0,
                              double warm_up_seconds = 1);

}  // namespace exo::bench
