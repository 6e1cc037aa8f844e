#pragma once
// One pipeline scenario: a Daemon (exo's real poll thread and batch runners) over a
// topic of the mock cluster, timed from its first poll until the group's
// committed offsets reach the end of the topic, then the exactly-once check.
//
// Max-rate runs consume a workload produced beforehand. A paced run produces
// the workload while the daemon consumes, at `paced_rate` records/s, and
// measures latency: produce -> PostgreSQL commit (from pg_xact_commit_timestamp
// of each ledger row; needs track_commit_timestamp = on, which scripts/bench.sh
// sets) and produce -> handler start. Events produced in the first
// `warm_up_seconds` (connections opened, scripts loaded, the first fetches) are
// left out of the percentiles; the trace keeps them.
#include <functional>
#include <optional>
#include <string>

#include "bench_world.hpp"
#include "config/config.hpp"
#include "plain_consumer.hpp"
#include "protocol/handler_registry.hpp"
#include "scenario_result.hpp"

namespace exo::bench {

struct PipelineScenario {
    std::string name;
    Config config;                    // from BenchWorld::pipeline_config, then tuned
    const TopicWorkload* workload{};  // produced already, unless paced_rate > 0
    double paced_rate = 0;            // > 0: produce during the run at this rate
    double warm_up_seconds = 1;       // paced: events produced earlier are not in the percentiles
    ServerProcesses servers;          // for the CPU breakdown
    // The per-record ledger (one statement per payment) instead of the batch one.
    bool record_handler = false;
    // > 0: the batch ledger fails one record in `flaky_every` once (FlakyLedger),
    // naming it or not (`flaky_named`).
    int flaky_every = 0;
    bool flaky_named = true;
    // Non-empty: the batch ledger emits one record per applied payment to this topic through
    // the outbox (the shipped ledger's default), and the run is done only when the relay has
    // published every emit (ScenarioResult::seconds_to_published), not at the last offset commit.
    std::string applied_topic{};
    // The config claims in PostgreSQL only (exo-no-redis): a Redis command the daemon counted
    // fails the run, so "exo without Redis" is never measured with Redis in it.
    bool without_redis = false;
    // Set: not the ledger workload (`workload` unused). Its handler, topic, record count and
    // check stand in for the ledger's (the per-key concurrency scenarios, keyed_scenario.hpp).
    struct OwnWork {
        std::string topic;
        std::size_t records = 0;
        std::function<void(HandlerRegistry&)> register_handler;
        std::function<std::string(const Isolation&)> check;  // "" when correct, else why not
    };
    std::optional<OwnWork> own_work{};
    // Paced: another consumer of the same topic (the steady runs' plain consumer); producing
    // starts once it has its partitions too, so both see the whole stream from its start.
    const PlainConsumer* beside{};
};

// Never throws for a failure of the pipeline or the check: it is reported in
// ScenarioResult::failure. Throws for a broken setup (services unreachable).
ScenarioResult run_pipeline_scenario(BenchWorld& world, const Isolation& iso,
                                     const PipelineScenario& scenario, const BenchOptions& options);

}  // namespace exo::bench
