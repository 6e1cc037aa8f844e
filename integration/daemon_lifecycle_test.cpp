// The daemon's start and its poll loop, against real Redis, PostgreSQL and a mock
// Kafka cluster over TCP: a property the dead-letter producer refuses stops the
// start, every worker slot opens its PostgreSQL session when the daemon starts
// rather than at its first record, and a consumer that has finished everything
// it polled commits at once rather than at its next commit interval.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "kafka/kafka_error.hpp"
#include "pipeline_harness.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

namespace {

// The application_name of each client session of the harness's database named
// `like`, sorted.
std::vector<std::string> session_names(const PipelineHarness& h, const std::string& like) {
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction tx(c);
    std::vector<std::string> names;
    for (const auto& row : tx.exec_params(
             "SELECT application_name FROM pg_stat_activity WHERE datname = current_database() "
             "AND backend_type = 'client backend' AND application_name LIKE $1 "
             "ORDER BY application_name",
             like))
        names.push_back(row[0].as<std::string>());
    return names;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
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
    "every batch runner opens its PostgreSQL session when the daemon starts, before its first "
    "record, named after the runner in pg_stat_activity") {
    PipelineHarness h({.name = "open_sessions", .partitions = 2, .concurrency = 6});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // 6 runners, each named "exo/r<runner> <group>@<host>:<pid>:<n>".
    auto names = exo::testing::wait_until(
        "the runners' sessions", 30s, [&] { return joined(session_names(h, "exo/r%")); },
        [](const std::string& all) { return std::count(all.begin(), all.end(), ',') == 5; });
    for (const char* slot : {"exo/r0 ", "exo/r1 ", "exo/r2 ", "exo/r3 ", "exo/r4 ", "exo/r5 "}) {
        CAPTURE(slot);
        CHECK(names.find(slot + h.config().kafka.group_id) != std::string::npos);
    }
    CHECK(daemon.stats().batches == 0);  // no record was produced: none of them came from a batch
    daemon.stop();
}

TEST_CASE("a slot's session keeps the application_name its PostgreSQL uri gives") {
    PipelineHarness h({.name = "own_name", .partitions = 1, .concurrency = 1});
    h.mutable_config().postgres.uri = h.postgres_uri() + "&application_name=billing-consumer";
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    exo::testing::wait_until(
        "the slot's session", 30s, [&] { return joined(session_names(h, "billing-consumer")); },
        [](const std::string& all) { return !all.empty(); });
    CHECK(session_names(h, "exo/r%").empty());
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
