// The exactly-once pipeline end to end, against real Redis, PostgreSQL and a
// mock Kafka cluster over TCP: docs/design.md (from "The guarantee" through "Per record") and the
// failure-matrix rows that do not need an outage.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <pqxx/pqxx>

#include <exo/record.hpp>
#include "child_process.hpp"
#include "kafka/consumer.hpp"
#include "kafka/group_progress.hpp"
#include "pg/migrations.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "redis/redis_connection.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

TEST_CASE(
    "every payment is applied exactly once although event ids repeat in the same and in "
    "other partitions") {
    PipelineHarness h({.name = "e2e"});
    auto workload = exo::generate_payments(
        {.count = 3000, .accounts = 50, .duplicate_ratio = 0.15, .partitions = 4, .seed = 7});
    REQUIRE(workload.duplicates > 300);
    h.produce(workload);

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();

    h.check_exactly_once(workload);
    const auto& s = daemon.stats();
    CHECK(s.applied == workload.unique_events);
    CHECK(s.duplicates() == workload.duplicates);
    CHECK(s.dead_lettered == 0);
}

TEST_CASE("two daemons in one group never apply a duplicate twice") {
    PipelineHarness h({.name = "two", .partitions = 6, .concurrency = 1});
    auto workload = exo::generate_payments(
        {.count = 4000, .accounts = 60, .duplicate_ratio = 0.2, .partitions = 6, .seed = 11});
    RunningDaemon first(h.config(), h.registry(), h.bootstrap());
    RunningDaemon second(h.config(), h.registry(), h.bootstrap());
    h.produce(workload);
    REQUIRE(h.wait_until_consumed(120s));
    first.stop();
    second.stop();

    h.check_exactly_once(workload);
    CHECK(first.stats().applied + second.stats().applied == workload.unique_events);
    // Both members did work, or the test proved nothing about two consumers.
    CHECK(first.stats().polled > 0);
    CHECK(second.stats().polled > 0);
}

TEST_CASE(
    "a crash after the PostgreSQL commit but before complete leaves a duplicate that the "
    "next owner detects and repairs") {
    // The killed member is dropped after session.timeout.ms: 3 s instead of 6.
    PipelineHarness h({.name = "crash",
                       .partitions = 1,
                       .lease = 1500ms,
                       .session_timeout = 3000ms,
                       .concurrency = 1});
    std::vector<exo::PaymentMessage> messages{payment("c-1", "acc-1", 100, 1),
                                              payment("c-2", "acc-1", 20, 2),
                                              payment("c-3", "acc-1", 3, 3)};
    h.produce(messages);

    auto config_file = "/tmp/" + h.schema() + ".yaml";
    std::ofstream(config_file) << h.config_yaml();
    {
        exo::testing::ChildProcess child(
            exo::testing::exo_binary(), {"run", "--config", config_file},
            {{"EXO_FAILPOINTS", "after_pg_commit=kill"}}, "/tmp/" + h.schema() + ".log");
        auto status = child.wait(60s);
        REQUIRE(status.has_value());
        REQUIRE(WIFSIGNALED(*status));
        CHECK(WTERMSIG(*status) == SIGKILL);
    }
    // The killed process committed its transaction, and nothing after it.
    auto applied_before = h.count("SELECT count(*) FROM ledger_entries");
    REQUIRE(applied_before >= 1);
    CHECK(h.claim_state("c-1") == "PROCESSING");
    CHECK(exo::group_lag(h.bootstrap(), h.config().kafka.group_id, h.topic()) != 0);

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 123}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(daemon.stats().duplicates_postgres == static_cast<std::uint64_t>(applied_before));
    CHECK(daemon.stats().applied == static_cast<std::uint64_t>(3 - applied_before));
    // The claims were taken over and repaired to COMPLETED.
    CHECK(h.claim_state("c-1") == "COMPLETED");
    CHECK(h.claim_state("c-3") == "COMPLETED");
}

// Serial (scripts/integration.sh): it flushes Redis (FLUSHALL) mid-run.
TEST_CASE("flushing Redis in the middle of a run keeps every effect exactly once" *
          doctest::test_suite("serial")) {
    PipelineHarness h({.name = "flush"});
    auto workload = exo::generate_payments(
        {.count = 3000, .accounts = 40, .duplicate_ratio = 0.2, .partitions = 4, .seed = 3});
    auto half = workload.messages.size() / 2;
    std::vector<exo::PaymentMessage> first(workload.messages.begin(),
                                           workload.messages.begin() + static_cast<long>(half));
    std::vector<exo::PaymentMessage> second(workload.messages.begin() + static_cast<long>(half),
                                            workload.messages.end());

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    h.produce(first);
    REQUIRE(h.wait_until_consumed(90s));
    exo::RedisConnection redis(exo::testing::redis_options());
    REQUIRE(redis.command({"FLUSHALL"}).type != exo::RedisReply::Type::error);
    h.produce(second);
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();

    h.check_exactly_once(workload);
    // Duplicates of first-half events arrived after the flush: only the dedup row knew them.
    CHECK(daemon.stats().duplicates_postgres > 0);
}

TEST_CASE("in latest mode an older sequence is recorded STALE and changes nothing") {
    PipelineHarness h({.name = "stale", .partitions = 1, .mode = exo::SequenceMode::latest});
    h.produce({payment("s-1", "acc-9", 1000, 1), payment("s-3", "acc-9", 30, 3),
               payment("s-2", "acc-9", 200, 2)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-9", 1030}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 2);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 's-2' AND outcome = "
                  "'STALE'") == 1);
    CHECK(h.count("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-9'") == 3);
    CHECK(daemon.stats().stale == 1);
}

TEST_CASE("in strict mode payments that arrive 1, 3, 2 are applied as 1, 2, 3") {
    PipelineHarness h({.name = "strict", .partitions = 1});
    h.produce({payment("o-1", "acc-5", 1, 1), payment("o-3", "acc-5", 100, 3)});
    exo::PaymentMessage late = payment("o-2", "acc-5", 10, 2);
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // Let o-3 reach the gap check and be held before its predecessor exists.
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (daemon.stats().applied < 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    REQUIRE(daemon.stats().applied == 1);
    h.produce({late});
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-5", 111}});
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction tx(c);
    auto order = tx.exec("SELECT event_id FROM ledger_entries ORDER BY applied_at, sequence_id");
    REQUIRE(order.size() == 3);
    // applied_at is the transaction time: o-3 committed after o-2, never before.
    CHECK(tx.exec("SELECT (SELECT applied_at FROM ledger_entries WHERE event_id='o-3') >= "
                  "(SELECT applied_at FROM ledger_entries WHERE event_id='o-2')")[0][0]
              .as<bool>());
}

TEST_CASE(
    "a payload that cannot be parsed is dead-lettered with its reason and does not block "
    "its partition") {
    PipelineHarness h({.name = "dlq", .partitions = 1});
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        producer.produce({h.topic(), 0, std::string("k"), "this is not json", {{"trace", "t-1"}}});
        producer.produce({h.topic(), 0, std::string("k"), R"({"accountId":"acc-1"})", {}});
        producer.flush(10s);
    }
    h.produce({payment("d-1", "acc-1", 5, 1)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 5}});
    CHECK(daemon.stats().dead_lettered == 2);

    auto got = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 2);
    REQUIRE(got.size() == 2);
    CHECK(got[0].value == "this is not json");
    REQUIRE(got[0].header("exo-error") != nullptr);
    CHECK(got[0].header("exo-error")->value->find("not valid JSON") != std::string::npos);
    CHECK(got[0].header("trace")->value == "t-1");  // original headers kept
    CHECK(got[0].header("exo-original-topic")->value == h.topic());
    CHECK(got[0].header("exo-original-partition")->value == "0");
    CHECK(got[0].header("exo-original-offset")->value == "0");
    CHECK(got[1].header("exo-error")->value->find("/eventId") != std::string::npos);
}

TEST_CASE("exo migrate applies every migration once and is idempotent") {
    PipelineHarness h({.name = "migrate"});  // applied all migrations already
    pqxx::connection c(h.postgres_uri());
    CHECK(exo::apply_migrations(c, exo::testing::ledger_migrations()).empty());
    CHECK(exo::pending_migrations(c, exo::testing::ledger_migrations()).empty());
    CHECK(h.count("SELECT count(*) FROM exo_schema_migrations") >= 2);
}

TEST_CASE("dedup rows older than the retention are pruned and newer ones kept") {
    PipelineHarness h({.name = "prune", .partitions = 1});
    h.mutable_config().postgres.dedup_retention = std::chrono::hours(24 * 30);
    {
        // The daemon prunes its own group's rows (retention_test.cpp has the rest).
        const auto g = h.config().kafka.group_id;
        pqxx::connection c(h.postgres_uri());
        pqxx::work tx(c);
        tx.exec(
            "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
            " kafka_partition, kafka_offset, outcome, processed_at) VALUES"
            " ('" +
            g +
            "', 'old', 1, 't', 0, 0, 'APPLIED', now() - interval '31 days'),"
            " ('" +
            g + "', 'new', 1, 't', 0, 1, 'APPLIED', now() - interval '29 days')");
        tx.commit();
    }
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'old'") != 0 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(100ms);
    daemon.stop();
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'old'") == 0);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'new'") == 1);
}
