// The transactional outbox (docs/outbox.md) against real PostgreSQL and the
// mock Kafka cluster: what handlers emit is published once per committed run,
// never for a rolled-back one, in commit order per (topic, key); a relay killed
// between Kafka's acknowledgement and its mark re-publishes, and a downstream
// binding keyed by exo-outbox-id applies each record once; two relays never
// publish a row at once; rows wait out a Kafka outage and then go in order.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>

#include "child_process.hpp"
#include "kafka/group_progress.hpp"
#include "outbox/outbox_relay.hpp"
#include "outbox_support.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::ChildProcess;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;
using exo::testing::wait_until;

using exo::testing::check_per_key_order;
using exo::testing::emit_committed;
using exo::testing::numbered;
using exo::testing::pending;
using exo::testing::relay_producer;
using exo::testing::topic_size;

TEST_CASE(
    "records emitted by handlers are published exactly once under duplicate input, each with "
    "its own exo-outbox-id") {
    PipelineHarness h({.name = "outbox_once", .partitions = 4, .handler = "emitting_ledger"});
    h.cluster().create_topic(h.out_topic(), 4);
    auto workload = exo::generate_payments(
        {.count = 600, .accounts = 12, .duplicate_ratio = 0.25, .partitions = 4, .seed = 7});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    h.produce(workload);
    REQUIRE(h.wait_until_consumed(120s));
    wait_until(
        "the outbox to drain", 60s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    h.check_exactly_once(workload);

    const auto expected = static_cast<std::int64_t>(workload.unique_events);
    CHECK(topic_size(h, h.out_topic(), 4) == expected);
    auto records = read_topic(h.bootstrap(), h.out_topic(), workload.unique_events);
    REQUIRE(records.size() == workload.unique_events);
    std::set<std::string> events, ids;
    for (const auto& r : records) {
        events.insert(exo::testing::header(r, "event"));
        ids.insert(exo::testing::header(r, "exo-outbox-id"));
    }
    CHECK(events.size() == workload.unique_events);
    CHECK(ids.size() == workload.unique_events);
    CHECK(ids.count("(missing)") == 0);
    // The ledger inside emitting_ledger announces each payment on ledger.applied too.
    CHECK(d.stats().outbox_published.load() == 2 * workload.unique_events);
}

TEST_CASE(
    "a handler run that rolls back emits nothing: a permanent failure, retries, a swallowed "
    "database error and an emit Kafka cannot take") {
    PipelineHarness h({.name = "outbox_rollback",
                       .partitions = 1,
                       .with_sequence = false,
                       .handler = "emitting_ledger",
                       .max_attempts = 3});
    h.cluster().create_topic(h.out_topic(), 1);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    h.produce({payment("poison-1", "acc-1", 10, 1), payment("flaky-1", "acc-2", 20, 1),
               payment("swallow-1", "acc-3", 30, 1), payment("bademit-1", "acc-4", 40, 1),
               payment("good-1", "acc-5", 50, 1)});
    REQUIRE(h.wait_until_consumed(120s));
    wait_until(
        "the outbox to drain", 30s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });

    // flaky-1 emitted on each of its three runs; only the committed one stays.
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE topic = '" + h.out_topic() + "'") == 2);
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE topic = 'ledger.applied'") == 2);
    CHECK(topic_size(h, h.out_topic(), 1) == 2);
    auto records = read_topic(h.bootstrap(), h.out_topic(), 2);
    std::multiset<std::string> events;
    for (const auto& r : records) events.insert(exo::testing::header(r, "event"));
    CHECK(events == std::multiset<std::string>{"flaky-1", "good-1"});
    // The others were dead-lettered, bademit-1 with the reason.
    auto dead = read_topic(h.bootstrap(), h.topic() + ".dlq", 3);
    REQUIRE(dead.size() == 3);
    bool named = false;
    for (const auto& r : dead)
        if (exo::testing::header(r, "exo-error").find("'bad topic' is not a Kafka topic name") !=
            std::string::npos)
            named = true;
    CHECK(named);
}

TEST_CASE(
    "a relay killed between Kafka's acknowledgement and its mark re-publishes, and a "
    "downstream binding keyed by exo-outbox-id applies each record once") {
    PipelineHarness h({.name = "outbox_kill", .partitions = 1, .with_sequence = false});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    h.cluster().create_topic(out + ".dlq", 1);
    std::vector<exo::OutboxMessage> emitted;
    std::map<std::string, std::int64_t> expected;
    for (int i = 0; i < 20; ++i) {
        auto p = payment("down-" + std::to_string(i), "acc-" + std::to_string(i % 3), 10 + i, 1);
        expected[p.payment.account_id] += p.payment.amount;
        emitted.push_back({out, p.payment.account_id, p.payment.json(), {}});
    }
    emit_committed(h, emitted);

    const auto config_file = "/tmp/" + h.schema() + ".yaml";
    std::ofstream(config_file) << h.config_yaml();
    auto launch = [&](int n, const std::map<std::string, std::string>& env) {
        return std::make_unique<ChildProcess>(
            exo::testing::exo_binary(), std::vector<std::string>{"run", "--config", config_file},
            env, "/tmp/" + h.schema() + "-" + std::to_string(n) + ".log");
    };
    {
        auto killed = launch(0, {{"EXO_FAILPOINTS", "outbox_after_ack=kill@1"}});
        auto status = killed->wait(60s);
        REQUIRE(status.has_value());
        CHECK(WIFSIGNALED(*status));
        CHECK(WTERMSIG(*status) == SIGKILL);
    }
    // Kafka has every record; PostgreSQL never heard.
    CHECK(partition_end(h.bootstrap(), out) == 20);
    CHECK(pending(h) == 20);

    auto again = launch(1, {});
    wait_until(
        "the restarted relay to publish again", 60s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    again->signal(SIGTERM);
    CHECK(again->wait(30s).has_value());
    CHECK(partition_end(h.bootstrap(), out) == 40);

    // Downstream: the ledger on the outbox topic, keyed by the header.
    exo::Config down = h.config();
    down.kafka.group_id += "_down";
    down.outbox.enabled = false;
    auto& b = down.bindings.front();
    b.topic = out;
    b.dead_letter_topic = out + ".dlq";
    b.key = {exo::KeySourceKind::header, "exo-outbox-id"};
    b.handler = "ledger";
    RunningDaemon d(down, h.registry(), h.bootstrap());
    wait_until(
        "the downstream group to consume the outbox topic", 120s,
        [&] { return exo::group_lag(h.bootstrap(), down.kafka.group_id, out).value_or(-1); },
        [](std::int64_t lag) { return lag == 0; });
    d.stop();
    CHECK(h.balances() == expected);
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 20);
    CHECK(d.stats().applied.load() == 20);
    CHECK(d.stats().duplicates() == 20);
}

namespace {

// Two relays drain 12 keys of 20 rows. With `a_unit_parked`, a unit of
// another topic has a failure on record, so every round takes the skip scan
// over units; without, every round takes the group's oldest rows in id order.
void two_relays_share_the_rows(bool a_unit_parked) {
    PipelineHarness h(
        {.name = a_unit_parked ? "outbox_two_units" : "outbox_two_oldest", .partitions = 1});
    const std::string out = h.out_topic();
    if (a_unit_parked) {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction(c).exec_params(
            "INSERT INTO exo_outbox_units (consumer_group, topic, ordering_key, failures,"
            " next_attempt_at, failed_id, reason)"
            " VALUES ($1, 'elsewhere', '\\x00', 1, now() + interval '1 hour', 0, 'test')",
            h.config().kafka.group_id);
    }
    h.cluster().create_topic(out, 3);
    // Slow acknowledgements, so both relays hold rows at the same time.
    REQUIRE(rd_kafka_mock_broker_set_rtt(h.cluster().raw(), 1, 30) == RD_KAFKA_RESP_ERR_NO_ERROR);
    // More keys than a round takes, so both relays find free keys; fewer than two
    // rounds, so a relay that ignored the head rule would take a key's second row
    // while the other publishes its first.
    emit_committed(h, numbered(out, 12, 20));
    h.mutable_config().outbox.batch_size = 8;
    exo::PipelineStats stats_a, stats_b;
    exo::Failpoints none;
    {
        exo::OutboxRelay a(h.config().outbox, h.config().postgres, h.config().kafka.group_id,
                           stats_a, none, relay_producer(h));
        exo::OutboxRelay b(h.config().outbox, h.config().postgres, h.config().kafka.group_id,
                           stats_b, none, relay_producer(h));
        a.start();
        b.start();
        wait_until(
            "both relays to drain the outbox", 120s, [&] { return pending(h); },
            [](std::int64_t n) { return n == 0; });
    }
    CHECK(stats_a.outbox_published.load() > 0);
    CHECK(stats_b.outbox_published.load() > 0);
    CHECK(stats_a.outbox_published.load() + stats_b.outbox_published.load() == 240);
    CHECK(topic_size(h, out, 3) == 240);
    auto records = read_topic(h.bootstrap(), out, 240);
    CHECK(check_per_key_order(records) == 240);
}

}  // namespace

TEST_CASE(
    "two relays publishing at once never both publish a row, and each key keeps its order: "
    "rounds of the oldest rows") {
    two_relays_share_the_rows(false);
}

TEST_CASE(
    "two relays publishing at once never both publish a row, and each key keeps its order: "
    "rounds of the skip scan over units") {
    two_relays_share_the_rows(true);
}

TEST_CASE(
    "a relay that cannot publish neither stalls the pipeline nor makes the daemon unready, and "
    "its backlog shows in the gauges") {
    PipelineHarness h({.name = "outbox_refused",
                       .partitions = 2,
                       .with_sequence = false,
                       .handler = "emitting_ledger"});
    h.cluster().create_topic(h.out_topic(), 1);
    auto workload = exo::generate_payments(
        {.count = 200, .accounts = 5, .duplicate_ratio = 0.1, .partitions = 2, .seed = 3});
    h.produce(workload);
    // From now on Kafka refuses every produce request (the consumer's fetches go on).
    constexpr int kApiProduce = 0;
    h.cluster().push_request_errors(kApiProduce, 100000,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    h.check_exactly_once(workload);
    const auto emitted = static_cast<std::int64_t>(2 * workload.unique_events);
    wait_until(
        "failed rounds and the backlog in the gauges", 30s,
        [&] {
            return std::to_string(d.stats().outbox_failures.load()) + " failures, " +
                   std::to_string(d.stats().outbox_pending.load()) + " pending";
        },
        [&](const std::string&) {
            return d.stats().outbox_failures.load() >= 2 &&
                   d.stats().outbox_pending.load() == emitted;
        });
    CHECK(d.ready());
    CHECK(pending(h) == emitted);
    CHECK(d.stats().outbox_published.load() == 0);
    h.cluster().clear_request_errors(kApiProduce);
    wait_until(
        "the outbox to drain once Kafka accepts", 60s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    CHECK(topic_size(h, h.out_topic(), 1) == static_cast<std::int64_t>(workload.unique_events));
}

TEST_CASE("with Kafka down emitted rows wait, and are published in order once it is back") {
    PipelineHarness h({.name = "outbox_kafka_down", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 2);
    h.mutable_config().outbox.batch_size = 8;
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    h.cluster().set_broker_down(1);
    emit_committed(h, numbered(out, 4, 10));
    relay.start();
    wait_until(
        "a failed round", 60s, [&] { return stats.outbox_failures.load(); },
        [](std::uint64_t n) { return n >= 1; });
    CHECK(pending(h) == 40);
    CHECK(stats.outbox_pending.load() == 40);  // the gauge shows the backlog meanwhile
    CHECK(stats.outbox_published.load() == 0);
    h.cluster().set_broker_up(1);
    wait_until(
        "the outbox to drain after Kafka is back", 120s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    relay.stop();
    auto records = read_topic(h.bootstrap(), out, 40);
    // A round that timed out may have had records delivered anyway: they are
    // published again (duplicates, caught downstream by exo-outbox-id), so
    // order is checked on first occurrences.
    std::vector<exo::Record> first;
    std::set<std::string> seen;
    for (auto& r : records)
        if (seen.insert(exo::testing::header(r, "exo-outbox-id")).second)
            first.push_back(std::move(r));
    CHECK(check_per_key_order(first) == 40);
}
