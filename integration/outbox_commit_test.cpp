// The outbox's commit path (docs/outbox.md (its write side, ordering and relay)) against real
// PostgreSQL and the mock Kafka cluster: an emitting transaction sends no
// NOTIFY (it would serialize the database's commits), the daemon's own relay is
// woken in-process after the COMMIT, a relay learns of other processes' rows
// by polling (or by a NOTIFY sent outside the pipeline), and keyless emits of
// concurrent transactions never wait for each other.
#include <doctest/doctest.h>

#include <pqxx/pqxx>

#include "kafka/group_progress.hpp"
#include "outbox/outbox_relay.hpp"
#include "outbox_support.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::emit_committed;
using exo::testing::numbered;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::pending;
using exo::testing::PipelineHarness;
using exo::testing::relay_producer;
using exo::testing::RunningDaemon;
using exo::testing::topic_size;
using exo::testing::wait_until;

namespace {

// Counts the NOTIFYs on exo_outbox its session receives.
class NotifyCounter final : public pqxx::notification_receiver {
public:
    explicit NotifyCounter(pqxx::connection_base& c)
        : notification_receiver(c, exo::kOutboxChannel) {}
    void operator()(const std::string&, int) override { ++received; }
    int received = 0;
};

// The relay's first round has run (the backlog gauge is read before it) and
// it now waits for a wake-up or its poll interval.
void wait_for_first_round(const exo::PipelineStats& stats) {
    wait_until(
        "the relay's first round", 30s, [&] { return stats.outbox_pending.load(); },
        [](std::int64_t n) { return n == 0; });
    std::this_thread::sleep_for(300ms);
}

}  // namespace

TEST_CASE(
    "a daemon's emitting commits send no NOTIFY, and its own relay publishes them at once "
    "with a 60 s poll interval") {
    PipelineHarness h({.name = "outbox_doorbell",
                       .partitions = 2,
                       .with_sequence = false,
                       .handler = "emitting_ledger"});
    h.cluster().create_topic(h.out_topic(), 1);
    h.mutable_config().outbox.poll_interval = 60s;
    pqxx::connection listening(h.postgres_uri());
    NotifyCounter notifies(listening);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    wait_for_first_round(d.stats());
    std::vector<exo::PaymentMessage> payments;
    for (int i = 0; i < 20; ++i)
        payments.push_back(
            payment("bell-" + std::to_string(i), "acc-" + std::to_string(i % 4), 10 + i, 1));
    h.produce(payments);
    REQUIRE(h.wait_until_consumed(60s));
    // Far below the 60 s poll: only the doorbell rung after each COMMIT wakes it.
    wait_until(
        "the daemon's relay to publish its commits", 20s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    CHECK(topic_size(h, h.out_topic(), 1) == 20);
    // A NOTIFY would have reached this session at each COMMIT.
    listening.await_notification(0, 200000);
    CHECK(notifies.received == 0);
}

TEST_CASE("a relay publishes rows another process committed without a NOTIFY, by polling") {
    PipelineHarness h({.name = "outbox_poll", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    h.mutable_config().outbox.poll_interval = 500ms;
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    relay.start();
    wait_for_first_round(stats);
    emit_committed(h, numbered(out, 1, 3));  // no doorbell of this relay, no NOTIFY
    wait_until(
        "the polling relay to publish", 20s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    CHECK(partition_end(h.bootstrap(), out) == 3);
}

TEST_CASE(
    "a relay with a long poll interval publishes at once a commit that sends NOTIFY (exo outbox "
    "reroute, writers of older versions)") {
    PipelineHarness h({.name = "outbox_notify", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    h.mutable_config().outbox.poll_interval = 60s;
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    relay.start();
    wait_for_first_round(stats);
    pqxx::connection c(h.postgres_uri());
    exo::prepare_outbox_statements(c);
    pqxx::work tx(c);
    exo::write_outbox(tx, h.config().kafka.group_id, numbered(out, 1, 3));
    exo::notify_outbox_relays(tx);
    tx.commit();
    wait_until(
        "the emitted rows to be published", 10s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    CHECK(partition_end(h.bootstrap(), out) == 3);
}

TEST_CASE(
    "keyless emits of two open transactions to one topic do not wait for each other, and keyless "
    "rows of the old shared counter are still published") {
    PipelineHarness h({.name = "outbox_keyless", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 2);
    const auto& group = h.config().kafka.group_id;
    // Rows written before keyless units were per session: one unit per topic ('').
    {
        pqxx::connection c(h.postgres_uri());
        pqxx::work tx(c);
        tx.exec_params(
            "INSERT INTO exo_outbox (consumer_group, topic, value, ordering_key, seq) VALUES"
            " ($1, $2, 'old-1', '', 1), ($1, $2, 'old-2', '', 2)",
            group, out);
        tx.exec_params(
            "INSERT INTO exo_outbox_keys (consumer_group, topic, ordering_key, last_seq) VALUES"
            " ($1, $2, '', 2)",
            group, out);
        tx.commit();
    }
    const auto keyless = [&](const std::string& prefix, int n) {
        std::vector<exo::OutboxMessage> messages;
        for (int i = 1; i <= n; ++i)
            messages.push_back({out, std::nullopt, prefix + std::to_string(i), {}});
        return messages;
    };
    pqxx::connection first(h.postgres_uri());
    pqxx::connection second(h.postgres_uri());
    exo::prepare_outbox_statements(first);
    exo::prepare_outbox_statements(second);
    pqxx::work one(first);
    pqxx::work two(second);
    exo::write_outbox(one, group, keyless("one-", 3));
    // With one counter row per topic this waited for `one` to end: it fails instead.
    two.exec("SET LOCAL lock_timeout = '1s'");
    CHECK_NOTHROW(exo::write_outbox(two, group, keyless("two-", 2)));
    two.commit();
    one.commit();
    CHECK(h.count("SELECT count(*) FROM exo_outbox_keys WHERE topic = '" + out +
                  "' AND ordering_key = '' AND last_seq = 2") == 1);

    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    relay.start();
    wait_until(
        "the relay to publish old and new keyless rows", 30s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    relay.stop();
    CHECK(topic_size(h, out, 2) == 7);
    CHECK(stats.outbox_published.load() == 7);
}
