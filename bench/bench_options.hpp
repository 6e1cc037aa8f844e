#pragma once
// exo_bench's command line, parsed once into a plain struct (defaults are the
// workload described in docs/performance.md). Addresses default to the EXO_* variables that
// scripts/services.sh writes, like the integration tests.
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config_overrides.hpp"

namespace exo::bench {

// An extra pipeline scenario next to exo-default, e.g. "concurrency=4,batch_size=200,linger_ms=2"
// or any exo.yaml path: "claim.store=postgres,pipeline.batch_size=500". Unset fields keep
// exo-default's value.
struct PipelineOverrides {
    std::string spec;                // as given, used in the scenario name
    std::optional<int> concurrency;  // pipeline.concurrency
    std::optional<int> batch_size;
    std::optional<int> linger_ms;
    std::optional<int> commit_interval_ms;
    // observability=1: the HTTP endpoint on, librdkafka statistics every 5 s,
    // and /metrics scraped every second, as a Prometheus would.
    bool observability = false;
    // Names with a '.': exo.yaml paths, applied through exo's config parser (config_overrides.hpp).
    std::vector<ConfigOverride> config;
};

// What runs without --only: the comparison of issue "Throughput" (the inbox peer and
// exo's configurations against it, latency at half load) and the limit of exo's SQL
// shape, which costs seconds. Not inbox-peer-paced: the mock cluster answers a fetch with
// one producer batch per partition (librdkafka's mock Fetch handler), so under a paced
// trickle the peer, one transaction per fetched partition batch, commits about one record
// per transaction and falls behind; its latency there says more about the mock than
// about the peer (docs/performance.md).
inline constexpr const char* kDefaultScenarios[] = {
    "inbox-peer", "exo-default", "exo-emits", "exo-no-redis", "postgres-bare-set", "exo-paced"};
// Added by --all: the earlier designs exo is compared with (minutes, per-record most).
inline constexpr const char* kAllScenarios[] = {"exo-record-handler", "exo-per-record-sql",
                                                "per-record", "postgres-bare"};

struct BenchOptions {
    // Kafka: empty, the in-process mock cluster; else a real cluster's bootstrap servers
    // (scripts/bench.sh --kafka apache), whose topics exo_bench creates and deletes.
    std::string bootstrap;
    std::string kafka_label;  // how the report names that cluster ("Apache Kafka 3.9.1")
    int broker_pid = 0;       // > 0: the real broker's process, its CPU reported per scenario
    // librdkafka consumer properties set for every consumer of the run (exo's and the plain
    // consumer's), over the mock's recommended ones; repeatable --kafka-property K=V.
    std::vector<std::pair<std::string, std::string>> kafka_properties;
    int records = 200000;                   // messages of the main workload, duplicates included
    int accounts = 10000;                   // distinct sequence entities
    int partitions = 32;                    // of the benchmark topic
    double duplicate_ratio = 0.1;           // share of messages that re-send an earlier event
    int runs = 3;                           // each scenario runs this often; medians are reported
    int baseline_records = 20000;           // per-record baseline workload; 0: same as records
    std::string postgres_uri;               // required (EXO_POSTGRES_URI)
    std::string redis_host;                 // EXO_REDIS_HOST, else 127.0.0.1
    int redis_port = 6379;                  // EXO_REDIS_PORT, else 6379
    std::vector<std::string> only;          // scenario names to run; empty: the default set
    bool prototypes = false;                // also run the proto-set-* scenarios
    bool all = false;                       // also run the per-record and per-statement comparisons
    bool pg_costs = false;                  // PostgreSQL's costs per record (pg_costs.hpp)
    std::optional<int> concurrency;         // exo-default's; unset: the config default
    std::vector<PipelineOverrides> extras;  // --extra, repeatable
    int paced_seconds = 10;                 // length of the exo-paced run; 0: skip it
    std::optional<double> paced_rate;       // records/s; unset: 50% of exo-default's median
    std::string latency_csv;                // paced exo runs' produce->commit trace, if set
    // The steady-rate latency runs (steady: exo-steady-R and plain-steady-R side by side, per
    // rate R): produced at each rate for warm-up + seconds.
    std::vector<double> steady_rates{5000, 20000};
    int steady_seconds = 10;      // measured, after the warm-up
    double steady_warm_up_s = 2;  // the producer's first seconds, left out of the percentiles
    // exo-steady's settings beside the defaults (--steady-config, an --extra spec); unset: defaults
    std::optional<PipelineOverrides> steady_config;
    // Both steady consumers on one stream at once; else one after the other, each alone (the
    // broker and the 2-core machine serve one consumer at a time, as a user's would).
    bool steady_together = false;
    std::string log_level = "warn";     // the daemon's spdlog level
    std::chrono::seconds timeout{300};  // per scenario, from start to last commit
    std::uint64_t seed = 42;
    // The per-key concurrency scenarios (keyed_scenario.hpp).
    int keyed_records = 10000;  // records of the keyed workload
    int keyed_keys = 1000;      // distinct Kafka record keys
    int keyed_partitions = 4;   // partitions of its topic
    int keyed_wait_us = 5000;   // simulated I/O per record
    // pipeline.concurrency of the concurrent ones: the 2 workers x 32 of earlier versions.
    int keyed_concurrency = 64;
    // The same for keyed-outside-*, whose waits overlap on the outside threads instead of
    // slots: fewer slots (PostgreSQL backends) and more outside threads serve them best.
    // (2 workers x 4 and 2 x 64 of earlier versions.)
    int keyed_outside_concurrency = 8;
    int keyed_outside_threads = 128;           // pipeline.outside_threads of keyed-outside-*
    int keyed_batch_size = 0;                  // pipeline.batch_size; 0: the config default (1000)
    std::vector<ConfigOverride> keyed_config;  // --keyed-config, set in every keyed scenario

    // Whether `scenario` runs: named by --only, else in the default set (kDefaultScenarios, the
    // --extra scenarios, and what --all and --prototypes add). --only keyed names every
    // keyed-* scenario; --only steady both steady-rate ones (exo-steady, plain-steady).
    bool wants(const std::string& scenario) const;
};

// Throws std::invalid_argument with a message naming the flag. Returns nullopt
// after printing the usage for --help.
std::optional<BenchOptions> parse_bench_options(int argc, char** argv);

}  // namespace exo::bench
