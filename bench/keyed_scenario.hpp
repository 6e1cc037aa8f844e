#pragma once
// The per-key concurrency scenarios (issue "Per-key concurrency", item 7): a handler that
// waits per record (keyed_handler.hpp: in handle(), pg_sleep in the transaction, or in
// before_transaction() outside it) over
// the keyed workload (keyed_workload.hpp), run with `ordering: partition` (today) and
// `ordering: key`, the same pipeline.concurrency, plus partition ordering at the default
// concurrency (the default config's shape; "-c1" from when that was one batch a worker). Each is an
// ordinary pipeline scenario (pipeline_scenario.hpp) with the keyed handler and check in place of
// the ledger's.
#include <string>

#include "bench_world.hpp"
#include "keyed_handler.hpp"
#include "keyed_workload.hpp"
#include "pipeline_scenario.hpp"

namespace exo::bench {

struct KeyedScenarioSpec {
    const char* name;
    KeyedWait wait;
    bool key_ordering;  // bindings[].ordering: key, else partition
    bool concurrent;    // pipeline.concurrency: --keyed-concurrency, else the default
};

// In the order they run; none is in the default set (--only NAME, or --only keyed for all).
inline constexpr KeyedScenarioSpec kKeyedScenarios[] = {
    {"keyed-client-partition-c1", KeyedWait::client, false, false},
    {"keyed-client-partition", KeyedWait::client, false, true},
    {"keyed-client-key", KeyedWait::client, true, true},
    {"keyed-server-partition-c1", KeyedWait::server, false, false},
    {"keyed-server-partition", KeyedWait::server, false, true},
    {"keyed-server-key", KeyedWait::server, true, true},
    {"keyed-outside-partition-c1", KeyedWait::outside, false, false},
    {"keyed-outside-partition", KeyedWait::outside, false, true},
    {"keyed-outside-key", KeyedWait::outside, true, true},
};

// pipeline.concurrency of `spec`'s concurrent scenarios (-partition, -key).
inline int keyed_concurrency(const BenchOptions& o, KeyedWait wait) {
    return wait == KeyedWait::outside ? o.keyed_outside_concurrency : o.keyed_concurrency;
}

// Creates the handler's tables in `iso` and returns the scenario: `world`'s config with the
// keyed binding (handler keyed_wait, key json /eventId, no sequence),
// --keyed-batch-size, and the ordering, concurrency (keyed_concurrency()) and, for
// keyed-outside-*, pipeline.outside_threads set through exo.yaml paths by exo's own parser
// before --keyed-config. Throws ConfigError when
// this build's parser refuses them. `w` must outlive the scenario's run (its check reads it).
PipelineScenario keyed_scenario(BenchWorld& world, const Isolation& iso, const KeyedWorkload& w,
                                const KeyedScenarioSpec& spec, const BenchOptions& options,
                                const ServerProcesses& servers);

}  // namespace exo::bench
