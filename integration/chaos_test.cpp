// Chaos: three real `exo run` processes share a 6-partition topic while a
// producer writes thousands of payments with duplicates. One process at a time
// is killed with SIGKILL (at random moments, and once exactly between the
// PostgreSQL commit and the Redis completion) and restarted; Redis is flushed
// once. Afterwards every payment must be applied exactly once and the group's
// committed offsets must reach the end; the ledger.applied records the ledger
// emits through the outbox (relays killed with their daemons) must be
// published for every payment, each exo-outbox-id in its account's sequence
// order, none lost. Once as by default, once with ordering: key, several batches
// per worker and a PostgreSQL restart on top (issue 20). What it asserts is deterministic; only
// the interleaving is not (the victim order is seeded).
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <thread>

#include "chaos.hpp"
#include "pipeline_harness.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::PipelineHarness;

namespace {

// What varies between the chaos runs: the binding's ordering, the batches a worker
// runs at once, and whether PostgreSQL is restarted (a crash: pg_ctl -m immediate)
// once mid-run as well.
struct ChaosRun {
    const char* name;
    exo::Ordering ordering = exo::Ordering::partition;
    int concurrency = 1;
    bool restart_postgres = false;
};

void run_chaos(const ChaosRun& run) {
    // A killed member is noticed after session.timeout.ms and a rejoin waits that less
    // 1 s: 3 s instead of 6 keeps the kills (and the producer) as frequent against the
    // group's clock as before, in half the time.
    PipelineHarness h({.name = run.name,
                       .partitions = 6,
                       .lease = 1500ms,
                       .session_timeout = 3000ms,
                       .ordering = run.ordering,
                       .concurrency = run.concurrency});
    auto workload = exo::generate_payments(
        {.count = 6000, .accounts = 100, .duplicate_ratio = 0.1, .partitions = 6, .seed = 99});

    exo::testing::DaemonFleet daemons(h, 3);

    // The producer: the workload in 12 chunks over about 6 s.
    std::thread producer([&] {
        const std::size_t chunks = 12;
        auto per = (workload.messages.size() + chunks - 1) / chunks;
        for (std::size_t c = 0; c < chunks; ++c) {
            auto begin = workload.messages.begin() +
                         static_cast<long>(std::min(c * per, workload.messages.size()));
            auto end = workload.messages.begin() +
                       static_cast<long>(std::min((c + 1) * per, workload.messages.size()));
            h.produce(std::vector<exo::PaymentMessage>(begin, end));
            std::this_thread::sleep_for(500ms);
        }
    });

    std::mt19937 rng(1234);
    int kills = 0;
    for (int round = 0; round < 6; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1250 + rng() % 1000));
        auto victim = rng() % daemons.size();
        daemons.kill(victim);
        ++kills;
        if (round == 2) exo::testing::flush_redis();
        // While the producer still writes, so batches are cut and others meet it down.
        if (round == 1 && run.restart_postgres) {
            exo::testing::services("postgres-stop");
            std::this_thread::sleep_for(2s);
            exo::testing::services("postgres-start");
        }
        // One replacement dies exactly in the window between commit and complete.
        std::map<std::string, std::string> env;
        if (round == 1) env["EXO_FAILPOINTS"] = "after_pg_commit=kill@2";
        daemons.launch(victim, env);
    }
    producer.join();

    // The failpoint victim may be dead: make sure three daemons finish the job.
    for (std::size_t i = 0; i < daemons.size(); ++i)
        if (daemons.ended(i)) daemons.launch(i);
    bool consumed = h.wait_until_consumed(120s);
    const auto pending = [&] { return h.count("SELECT count(*) FROM exo_outbox_pending"); };
    const bool published = exo::testing::eventually([&] { return pending() == 0; }, 60s);
    daemons.terminate();
    CHECK(kills == 6);
    REQUIRE(consumed);
    h.check_exactly_once(workload);

    // The outbox: one ledger.applied row per payment, all published (a relay
    // killed mid-round re-publishes, so Kafka may hold some twice, with the
    // same exo-outbox-id), and per account in sequence order.
    CHECK(published);
    const auto outbox = exo::testing::outbox_figures(h);
    const auto unique = static_cast<std::int64_t>(workload.unique_events);
    CHECK(outbox.rows == unique);
    CHECK(outbox.in_kafka >= unique);
    CHECK(outbox.distinct_ids == unique);
    CHECK(outbox.in_order);
}

}  // namespace

// Serial (scripts/integration.sh): they kill and restart their daemons and flush Redis on a
// schedule, the second restarts PostgreSQL too.
TEST_CASE(
    "chaos: kill -9 and restarts of three daemons and a Redis flush while producing still "
    "apply every payment exactly once" *
    doctest::test_suite("serial")) {
    run_chaos({.name = "chaos"});
}

TEST_CASE(
    "chaos with ordering: key and 4 batches per worker: kill -9 and restarts of three daemons, a "
    "Redis flush and a PostgreSQL restart while producing still apply every payment exactly once "
    "in each account's order" *
    doctest::test_suite("serial")) {
    run_chaos({.name = "chaoskey",
               .ordering = exo::Ordering::key,
               .concurrency = 4,
               .restart_postgres = true});
}
