#pragma once
// What one benchmark run sets up and tears down around its scenarios: an
// in-process mock Kafka cluster (or topics on a real one) holding the produced workloads, a fresh
// PostgreSQL schema (migrated) and Redis key prefix per scenario, the pipeline
// Config every scenario starts from, and the exactly-once check
// (as integration/pipeline_harness.cpp's check_exactly_once).
//
// Lifecycle: one BenchWorld per run; destroyed (mock cluster and its data, or the run's
// topics on a real cluster, gone) before the next. Not thread-safe: used from the main thread.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "config/config.hpp"
#include "kafka/mock_cluster.hpp"
#include "payments_workload.hpp"

namespace exo::bench {

// A workload and the topic it was (or will be) produced to.
struct TopicWorkload {
    std::string topic;
    PaymentWorkload workload;
    std::vector<std::string> payloads;  // per message: the padded JSON actually sent
    std::size_t payload_bytes_min = 0, payload_bytes_max = 0;
    double payload_bytes_avg = 0;
    std::size_t size() const { return workload.messages.size(); }
};

// Where a scenario keeps the ids of the events it applied.
enum class DedupTable {
    exo_processed,  // exo's dedup rows, outcome APPLIED
    peer_inbox,     // the inbox peer's table (bench/inbox_peer/inbox_peer.js)
};

// One scenario's private PostgreSQL schema and Redis key prefix.
struct Isolation {
    std::string name;        // unique, [a-z0-9_]
    std::string schema;      // created and migrated
    std::string uri;         // the base URI with search_path pinned to `schema`
    std::string group;       // consumer group and dedup-row group
    std::string key_prefix;  // Redis claim keys
};

// The Kafka side of a run: the in-process mock cluster (the default), or the real cluster at
// BenchOptions::bootstrap (scripts/bench.sh --kafka apache), where topics are created through
// the admin API and deleted when the world goes (one run's topics at a time on the broker).
class BenchWorld {
public:
    // Starts the mock cluster unless options.bootstrap names a real one. Throws KafkaError.
    BenchWorld(const BenchOptions& options, int run);
    // On a real cluster: deletes the topics this world created (never throws).
    ~BenchWorld();
    BenchWorld(const BenchWorld&) = delete;
    BenchWorld& operator=(const BenchWorld&) = delete;

    const std::string& bootstrap() const { return bootstrap_; }
    bool real_kafka() const { return !mock_.has_value(); }

    // Generates a workload of `count` messages (event ids prefixed `prefix`) with
    // 100-200-byte payloads and creates its topic (and the .dlq topic).
    TopicWorkload make_workload(const std::string& prefix, int count);
    // Produces every message and waits for the acknowledgements; then checks that
    // the mock cluster kept all of them (each partition keeps at most 5 MiB).
    // Throws std::runtime_error if not. Returns the seconds it took.
    double produce_all(const TopicWorkload& w);

    // A topic of `partitions` partitions, 0: --partitions (an emitting scenario's output).
    // Throws KafkaError.
    void create_topic(const std::string& topic, int partitions = 0);
    // Records each partition of `topic` holds. Throws std::runtime_error if the mock
    // cluster dropped some (5 MiB per partition at most).
    std::vector<std::int64_t> records_per_partition(const std::string& topic, int partitions) const;
    // Records a topic created by create_topic holds. Throws std::runtime_error if the mock
    // cluster dropped some (5 MiB per partition at most).
    std::int64_t messages_in(const std::string& topic) const;

    // A fresh schema (migrated) and names for one scenario.
    Isolation isolate(const std::string& scenario);
    // Drops the schema and the Redis keys of `iso`. Never throws (logs to stderr).
    void clean_up(const Isolation& iso);

    // The consumer properties of every consumer in the run, exo's and the plain one's: on the
    // mock cluster its recommended settings (as config/exo.yaml), on a real one librdkafka's
    // defaults; then --kafka-property.
    std::map<std::string, std::string> consumer_properties() const;
    // The daemon config: config.hpp's defaults, consumer_properties(), the ledger binding of
    // config/exo.yaml.
    Config pipeline_config(const Isolation& iso, const std::string& topic) const;

    // Empty if balances, ledger rows and dedup rows (exo's APPLIED rows, or the
    // inbox peer's rows) equal the workload's exactly-once result; otherwise what differs.
    std::string check_exactly_once(const Isolation& iso, const PaymentWorkload& w,
                                   DedupTable dedup = DedupTable::exo_processed) const;

private:
    const BenchOptions& options_;
    int run_;
    std::optional<MockCluster> mock_;  // empty: a real cluster at options_.bootstrap
    std::string bootstrap_;
    std::vector<std::string> created_;  // topics created on a real cluster, deleted at the end
};

// The ledger binding of config/exo.yaml: key /eventId, strict sequence
// /accountId /sequenceId.
KeySource ledger_key_source();
SequenceConfig ledger_sequence_config();

// `uri` with libpq's options=-csearch_path=<schema> appended.
std::string with_search_path(const std::string& uri, const std::string& schema);

}  // namespace exo::bench
