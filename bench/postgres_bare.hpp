#pragma once
// The PostgreSQL limit: the SQL the pipeline runs per record, through exo's own
// functions (insert_processed, advance_sequence, the LedgerHandler, and, if
// asked, the worker's SAVEPOINT statements), in transactions of `batch_size`
// records on `threads` connections, with no Kafka and no Redis. Records are
// spread over the threads by account, in workload order, so each account's
// sequence arrives in order as it does from its partition.
//
// The same harness runs the set-based prototypes (set_based_prototype.hpp).
#include <cstdint>
#include <functional>
#include <pqxx/connection>
#include <string>
#include <vector>

#include "bench_world.hpp"
#include "scenario_result.hpp"

namespace exo::bench {

enum class BareMode {
    per_record,            // exo's statements, one round trip each (postgres-bare)
    per_record_savepoint,  // ... plus the worker's SAVEPOINT round trip per record
    set_framework,         // prototype: dedup and sequences set-based, handler per record
    set_all,               // prototype: dedup, sequences and the ledger effects set-based
};

struct BareOptions {
    std::string name = "postgres-bare";
    BareMode mode = BareMode::per_record;
    int threads = 1;
    int batch_size = 100;
    ServerProcesses servers;  // for the CPU breakdown
};

// What one connection did.
struct ShareOutcome {
    std::uint64_t round_trips = 0, applied = 0, duplicates = 0, stale = 0;
    std::string error;
};

// Failures (SQL errors, a wrong result) are reported in ScenarioResult::failure.
ScenarioResult run_postgres_bare(BenchWorld& world, const Isolation& iso, const TopicWorkload& w,
                                 const BareOptions& options);

}  // namespace exo::bench
