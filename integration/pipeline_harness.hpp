#pragma once
// A test's own world for the pipeline: a PostgreSQL schema with every migration
// applied (search_path pinned through the connection URI, so the framework and
// the ledger tables of one test never meet another's), a Redis key prefix, a
// consumer group, and an in-process librdkafka mock cluster reached over TCP, or
// topics of its own on the real Apache Kafka (KafkaUnderTest::apache).
// Everything real; nothing shared with other tests but the servers.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <stop_token>
#include <string>
#include <thread>

#include "app/consumer_process.hpp"
#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "kafka/mock_cluster.hpp"
#include "kafka/producer.hpp"
#include "payments_workload.hpp"
#include "protocol/handler_registry.hpp"

namespace exo::testing {

// Which Kafka a harness runs against.
enum class KafkaUnderTest {
    mock,    // an in-process librdkafka mock cluster of its own (fault injection: cluster())
    apache,  // the real Apache Kafka of the real-kafka cases (apache_kafka.hpp): the
             // harness creates its topics there; cluster() is not available
};

struct HarnessOptions {
    std::string name = "pipeline";
    int partitions = 4;
    SequenceMode mode = SequenceMode::strict;
    bool with_sequence = true;
    int batch_size = 50;
    std::chrono::milliseconds lease{10000};
    RedisDownPolicy on_redis_down = RedisDownPolicy::pause;
    std::string handler = "ledger";  // or "misbehaving_ledger" (test_handlers.hpp)
    std::chrono::milliseconds slow_for{3000};
    int brokers = 1;
    int max_attempts = 3;
    std::chrono::milliseconds gap_timeout{20000};
    // The group's session.timeout.ms. The mock cluster makes a rebalance wait this
    // less 1 s for members to rejoin, and notices a killed or frozen member only
    // after it: tests that wait for either shorten it.
    std::chrono::milliseconds session_timeout{6000};
    // The binding's ordering and pipeline.concurrency (issue 20): which records of a
    // partition may run at once, and how many batches the process runs at once.
    Ordering ordering = Ordering::partition;
    int concurrency = 2;
    // Cases with KafkaUnderTest::apache are tagged `* doctest::test_suite("real-kafka")`:
    // scripts/integration.sh runs them against the real broker only.
    KafkaUnderTest kafka = KafkaUnderTest::mock;
};

// Stops or starts one of the servers of scripts/services.sh, on the same port.
// `action`: redis-stop, redis-start, postgres-stop, postgres-start.
void services(const std::string& action);

class PipelineHarness {
public:
    explicit PipelineHarness(HarnessOptions options = {});
    ~PipelineHarness();

    const Config& config() const { return config_; }
    Config& mutable_config() { return config_; }
    const std::string& topic() const { return topic_; }
    const std::string& schema() const { return schema_; }
    const std::string& bootstrap() const { return bootstrap_; }
    const std::string& postgres_uri() const { return uri_; }
    // The mock cluster's fault injection; fails the test case on the real broker.
    MockCluster& cluster();
    const HandlerRegistry& registry() const { return registry_; }
    // The topic emitting_ledger emits to (test_handlers.hpp): the topic + ".out".
    std::string out_topic() const { return topic_ + ".out"; }

    void produce(const PaymentWorkload& workload);
    void produce(const std::vector<PaymentMessage>& messages);

    // The YAML of this harness's config, for an `exo run` child process.
    std::string config_yaml() const;

    // Waits until the group's committed offsets reach the end of the topic.
    bool wait_until_consumed(std::chrono::seconds timeout) const;

    // The state of `key`'s Redis claim (PROCESSING, COMPLETED...), "(none)" without one.
    std::string claim_state(const std::string& key) const;
    std::map<std::string, std::int64_t> balances() const;
    std::int64_t count(const std::string& sql) const;
    // Asserts balances and ledger rows equal the workload's exactly-once result.
    void check_exactly_once(const PaymentWorkload& workload) const;

private:
    HarnessOptions options_;
    std::string schema_, uri_, topic_, group_, prefix_;
    std::unique_ptr<MockCluster> cluster_;  // null on KafkaUnderTest::apache
    std::string bootstrap_;
    HandlerRegistry registry_;
    Config config_;
};

// A daemon on its own thread; stopped (as by SIGTERM) and joined on destruction.
// `failpoints`: an EXO_FAILPOINTS spec for this daemon alone (core/failpoints.hpp).
class RunningDaemon {
public:
    RunningDaemon(const Config& config, const HandlerRegistry& registry,
                  const std::string& bootstrap, const std::string& failpoints = {});
    ~RunningDaemon();
    void stop();
    const PipelineStats& stats() const { return process_->daemon().stats(); }
    bool ready() const { return process_->daemon().ready(); }
    DaemonStatus status() const { return process_->daemon().status(); }

private:
    Failpoints failpoints_;
    std::unique_ptr<ConsumerProcess> process_;
    std::stop_source stop_;
    std::thread thread_;
    std::exception_ptr error_;
};

}  // namespace exo::testing
