// The daemon's start and its poll loop, against real Redis, PostgreSQL and a mock
// Kafka cluster over TCP: a property the dead-letter producer refuses stops the
// start, every worker slot opens its PostgreSQL session when the daemon starts
// rather than at its first record, and a consumer that has finished everything
// it polled commits at once rather than at its next commit interval.
#include <doctest/doctest.h>

#include <pqxx/pqxx>

#include "kafka/kafka_error.hpp"
#include "pipeline_harness.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

namespace {

// Client sessions of the harness's database other than the caller's own.
std::int64_t client_sessions(const PipelineHarness& h) {
    return h.count(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
}

}  // namespace

TEST_CASE(
    "a consumer that finished every record it polled commits at once, not at its next commit "
    "interval, and again after each later burst") {
    PipelineHarness h({.name = "drain_commit", .partitions = 2, .with_sequence = false});
    // A drain commits at most ten times an interval: every 6 s here.
    h.mutable_config().kafka.commit_interval = 60s;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());

    // Each burst is committed within seconds, though the interval is a minute.
    for (int burst = 0; burst < 2; ++burst) {
        CAPTURE(burst);
        auto workload = exo::generate_payments({.count = 40,
                                                .accounts = 5,
                                                .duplicate_ratio = 0,
                                                .partitions = 2,
                                                .seed = 31 + static_cast<std::uint64_t>(burst),
                                                .event_prefix = "burst" + std::to_string(burst)});
        h.produce(workload);
        REQUIRE(h.wait_until_consumed(30s));
    }
    daemon.stop();
    CHECK(daemon.stats().applied == 80);
}

TEST_CASE(
    "every worker slot opens its PostgreSQL session when the daemon starts, before its first "
    "record") {
    PipelineHarness h({.name = "open_sessions", .partitions = 2, .workers = 2, .concurrency = 3});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // 2 workers x 3 slots; the pruner's or relay's own sessions may come on top.
    exo::testing::wait_until(
        "the slots' sessions", 30s, [&] { return client_sessions(h); },
        [](std::int64_t n) { return n >= 6; });
    CHECK(daemon.stats().batches == 0);  // no record was produced: none of them came from a batch
    daemon.stop();
}

TEST_CASE(
    "a Kafka property the dead-letter producer refuses stops the daemon at start-up, naming it, "
    "though the consumer accepts it, no record was dead-lettered and there is no outbox relay") {
    PipelineHarness h({.name = "producer_check"});
    // A producer property the consumer ignores; exo's producers are idempotent,
    // which needs acks=all.
    h.mutable_config().kafka.properties["acks"] = "1";
    // No outbox relay either, whose producer would refuse it at start-up too.
    h.mutable_config().outbox.enabled = false;
    CHECK_THROWS_WITH_AS(RunningDaemon(h.config(), h.registry(), h.bootstrap()),
                         doctest::Contains("acks"), exo::KafkaConfigError);
}
