// Handlers' work outside the transaction (exo/outside_transaction.hpp) in the
// daemon, against real Redis, PostgreSQL and a mock Kafka cluster over TCP.
// The handlers (outside_handlers.hpp) record every before_transaction() call,
// look at the daemon's PostgreSQL session while it runs, and write what it
// handed over with each applied record.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "dedup_rows.hpp"
#include "observability/metrics_text.hpp"
#include "outside_handlers.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::HarnessOptions;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;
namespace outside = exo::testing::outside;

namespace {

// One partition, one worker, one slot: every before_transaction() call that
// overlaps another does so on the worker's outside threads.
HarnessOptions one_slot(const char* name, const char* handler) {
    return {.name = name,
            .partitions = 1,
            .with_sequence = false,
            .batch_size = 100,
            .handler = handler,
            .slow_for = 0ms,
            .max_attempts = 3,
            .ordering = exo::Ordering::key,
            .concurrency = 1};
}

void prepare(PipelineHarness& h, std::chrono::milliseconds pause) {
    outside::reset();
    outside::create_table(h.postgres_uri());
    outside::observer_uri = h.postgres_uri();
    outside::session_like = "exo/r% " + h.config().kafka.group_id + "@%";
    outside::pause = pause;
    h.mutable_config().pipeline.outside_threads = 8;
}

// Per account, its sequence ids in the order they were applied ("1 2 3").
std::map<std::string, std::string> applied_by_account(const PipelineHarness& h) {
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction tx(c);
    std::map<std::string, std::string> out;
    for (const auto& row :
         tx.exec("SELECT account_id, sequence_id FROM outside_applied ORDER BY serial")) {
        auto& sequences = out[row[0].as<std::string>()];
        sequences += (sequences.empty() ? "" : " ") + row[1].as<std::string>();
    }
    return out;
}

std::size_t total_calls() {
    std::lock_guard lock(outside::mutex);
    std::size_t n = 0;
    for (const auto& [_, calls] : outside::calls) n += calls.size();
    return n;
}

std::vector<std::string> calls_of(const std::string& account) {
    std::lock_guard lock(outside::mutex);
    return outside::calls[account];
}

// Records of three accounts, one before_transaction() failing per cue, through `handler`.
void check_failures(const char* name, const char* handler) {
    PipelineHarness h(one_slot(name, handler));
    prepare(h, 0ms);
    h.produce({payment("fail-once-r", "acc-r", 1, 1), payment("p-1", "acc-p", 1, 1),
               payment("x-1", "acc-x", 1, 1), payment("r-2", "acc-r", 1, 2),
               payment("refused-p", "acc-p", 1, 2), payment("x-2", "acc-x", 1, 2),
               payment("r-3", "acc-r", 1, 3), payment("p-3", "acc-p", 1, 3),
               payment("x-3", "acc-x", 1, 3)});
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(90s));
        CHECK(daemon.stats().outside_failures.load() == 2);
    }
    const auto applied = applied_by_account(h);
    CHECK(applied.at("acc-r") == "1 2 3");  // the retried first, the others behind it
    CHECK(applied.at("acc-p") == "1 3");    // the refused one dead-lettered, the next applied
    CHECK(applied.at("acc-x") == "1 2 3");
    CHECK(h.count("SELECT count(*) FROM outside_applied WHERE handed_over IS DISTINCT FROM "
                  "'outside:' || event_id") == 0);
    const auto rows = exo::testing::processed(h);
    CHECK(rows.at("refused-p").rfind("DEAD_LETTERED", 0) == 0);
    CHECK(rows.at("fail-once-r") == "APPLIED");
    // A failed call's lane ran nothing behind it until it was retried.
    CHECK(calls_of("acc-r") ==
          std::vector<std::string>{"fail-once-r", "fail-once-r", "r-2", "r-3"});
    CHECK(calls_of("acc-p") == std::vector<std::string>{"p-1", "refused-p", "p-3"});
    // Other keys are not held by either: each called once.
    CHECK(calls_of("acc-x") == std::vector<std::string>{"x-1", "x-2", "x-3"});
}

// 20 accounts x 5 records through one slot, each call 20 ms: checks
// everything the first case's name says.
void check_calls_outside(const char* name) {
    PipelineHarness h(one_slot(name, "outside_recording"));
    prepare(h, 20ms);
    constexpr int accounts = 20, per_account = 5;
    std::vector<exo::PaymentMessage> messages;
    for (int seq = 1; seq <= per_account; ++seq)
        for (int a = 0; a < accounts; ++a)
            messages.push_back(
                payment(fmt::format("k-{}-{}", a, seq), fmt::format("acc-{}", a), 1, seq));
    h.produce(messages);
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(90s));
        CHECK(daemon.stats().outside_failures.load() == 0);
        const auto metrics =
            exo::render_metrics(daemon.stats(), daemon.status(), daemon.ready(), "test");
        CHECK(metrics.find("exo_outside_duration_seconds_count{topic=\"" + h.topic() +
                           "\"} 100\n") != std::string::npos);
        CHECK(metrics.find("\nexo_outside_failures_total 0\n") != std::string::npos);
    }

    CHECK(h.count("SELECT count(DISTINCT event_id) FROM outside_applied") == 100);
    CHECK(h.count("SELECT count(*) FROM outside_applied") == 100);
    CHECK(h.count("SELECT count(*) FROM outside_applied WHERE handed_over IS DISTINCT FROM "
                  "'outside:' || event_id") == 0);
    const auto applied = applied_by_account(h);
    CHECK(applied.size() == accounts);
    for (int a = 0; a < accounts; ++a) {
        const auto account = fmt::format("acc-{}", a);
        INFO(account);
        CHECK(applied.at(account) == "1 2 3 4 5");
        std::vector<std::string> expected;
        for (int seq = 1; seq <= per_account; ++seq)
            expected.push_back(fmt::format("k-{}-{}", a, seq));
        CHECK(calls_of(account) == expected);  // once each, in order
    }
    CHECK_FALSE(outside::account_overlapped);
    CHECK(outside::max_in_flight.load() > 1);       // one slot: only the outside threads overlap
    CHECK(outside::max_in_flight.load() <= 8 + 1);  // outside_threads and the slot's own
    CHECK(outside::looked.load() == 100);
    CHECK(outside::saw_open_transaction.load() == 0);
}

}  // namespace

TEST_CASE(
    "before_transaction() runs outside the transaction, at the same time for different keys and "
    "one at a time in order within a key, and handle() gets what it handed over") {
    check_calls_outside("outsidework");
}

TEST_CASE(
    "a before_transaction() that throws fails its record as handle() would: retried, or "
    "dead-lettered, and the records of its key behind it wait for it") {
    check_failures("outsidefail", "outside_recording");
}

TEST_CASE(
    "a batch handler's before_transaction() failures fail only their records, and handle_batch() "
    "gets what each record's call handed over") {
    check_failures("outsidebatch", "outside_recording_batch");
}

TEST_CASE(
    "with ordering: partition and two slots, before_transaction() runs each partition's records "
    "in offset order, once each, and different partitions at once") {
    auto options = one_slot("outsidepartition", "outside_recording");
    options.partitions = 2;
    options.ordering = exo::Ordering::partition;
    options.concurrency = 2;
    PipelineHarness h(options);
    prepare(h, 5ms);
    std::vector<exo::PaymentMessage> messages;
    for (int seq = 1; seq <= 20; ++seq)
        for (int p = 0; p < 2; ++p)
            messages.push_back(
                payment(fmt::format("p{}-{}", p, seq), fmt::format("acc-{}", p), 1, seq, p));
    h.produce(messages);
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(90s));
    }
    for (int p = 0; p < 2; ++p) {
        const auto account = fmt::format("acc-{}", p);
        INFO(account);
        std::vector<std::string> expected;
        for (int seq = 1; seq <= 20; ++seq) expected.push_back(fmt::format("p{}-{}", p, seq));
        CHECK(calls_of(account) == expected);
    }
    CHECK(h.count("SELECT count(*) FROM outside_applied") == 40);
    CHECK(h.count("SELECT count(*) FROM outside_applied WHERE handed_over IS DISTINCT FROM "
                  "'outside:' || event_id") == 0);
    CHECK_FALSE(outside::account_overlapped);
    CHECK(outside::saw_open_transaction.load() == 0);
}

TEST_CASE(
    "a slot's batch of calls outside the transaction does not wait for another slot's: with both "
    "outside threads held in a batch of twenty keys, a later batch of two keys applies meanwhile") {
    auto options = one_slot("outsideshare", "outside_recording");
    options.concurrency = 2;
    options.batch_size = 40;  // a slot takes up to 20 ready records (its share of 40)
    PipelineHarness h(options);
    prepare(h, 0ms);
    h.mutable_config().pipeline.outside_threads = 2;
    std::vector<exo::PaymentMessage> held;
    for (int a = 0; a < 20; ++a)
        held.push_back(payment(fmt::format("held-{}", a), fmt::format("acc-{}", a), 1, 1));
    h.produce(held);
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        // Declared after the daemon: the held calls go on before it stops.
        const struct LetGoOnExit {
            ~LetGoOnExit() { outside::let_held_go(); }
        } let_go;
        exo::testing::wait_until(
            "the held batch's calls on its slot's thread and both outside threads", 60s,
            [] { return outside::held_calls(); }, [](int n) { return n >= 3; });
        // One batch has all twenty, so the other slot is free for the next.
        exo::testing::wait_until(
            "one batch out, with every held record", 60s,
            [&] {
                const auto s = daemon.status();
                std::size_t in_batch = 0;
                for (const auto& p : s.partitions) in_batch += p.in_flight;
                return fmt::format("{} batches, {} records", s.batches_in_flight, in_batch);
            },
            [](const std::string& seen) { return seen == "1 batches, 20 records"; });
        h.produce({payment("quick-1", "acc-q1", 1, 1), payment("quick-2", "acc-q2", 1, 1)});
        // Before, the quick batch's BEGIN waited for its helper task, queued
        // behind the held batch's on both outside threads.
        exo::testing::wait_until(
            "the quick batch applied", 30s,
            [&] {
                return h.count(
                    "SELECT count(*) FROM outside_applied WHERE event_id LIKE 'quick-%'");
            },
            [](auto n) { return n == 2; });
        CHECK(outside::held_calls() == 3);  // still held meanwhile
        CHECK(h.count("SELECT count(*) FROM outside_applied") == 2);
        outside::let_held_go();
        REQUIRE(h.wait_until_consumed(90s));
    }
    CHECK(h.count("SELECT count(*) FROM outside_applied") == 22);
    CHECK(h.count("SELECT count(DISTINCT event_id) FROM outside_applied") == 22);
    CHECK(total_calls() == 22);
    CHECK_FALSE(outside::account_overlapped);
}

TEST_CASE(
    "a shutdown whose drain deadline passes stops the batch's calls outside the transaction: "
    "what it did not call is redelivered and every record is applied once") {
    auto options = one_slot("outsideabandon", "outside_recording");
    options.ordering = exo::Ordering::partition;  // one lane: the batch's calls one after another
    PipelineHarness h(options);
    prepare(h, 300ms);
    h.mutable_config().pipeline.shutdown_timeout = 1500ms;
    std::vector<exo::PaymentMessage> messages;
    for (int seq = 1; seq <= 40; ++seq)
        messages.push_back(payment(fmt::format("a-{}", seq), "acc-a", 1, seq));
    h.produce(messages);
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        exo::testing::wait_until(
            "the batch's first calls", 60s, [] { return total_calls(); },
            [](std::size_t n) { return n >= 2; });
    }  // stopped: 40 calls of 300 ms would take 12 s, the drain waits 1.5 s
    const auto called = total_calls();
    CHECK(called < 40);
    INFO("calls before the stop: " << called);

    outside::pause = 0ms;
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(90s));
    }
    CHECK(h.count("SELECT count(*) FROM outside_applied") == 40);
    CHECK(h.count("SELECT count(DISTINCT event_id) FROM outside_applied") == 40);
    CHECK(applied_by_account(h).at("acc-a") ==
          "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 "
          "32 33 34 35 36 37 38 39 40");
}

TEST_CASE(
    "when handle() fails after the calls, the batch's re-run with a savepoint per record reuses "
    "what each call handed over: no record calls twice but the one retried") {
    PipelineHarness h(one_slot("outsiderrun", "outside_recording"));
    prepare(h, 0ms);
    h.mutable_config().pipeline.framework_sql =
        exo::FrameworkSql::per_record;  // no named exclusion
    h.produce({payment("x-1", "acc-x", 1, 1), payment("boom-y", "acc-y", 1, 1),
               payment("z-1", "acc-z", 1, 1), payment("x-2", "acc-x", 1, 2)});
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(90s));
        CHECK(daemon.stats().retries.load() == 1);
    }
    CHECK(h.count("SELECT count(*) FROM outside_applied") == 4);
    CHECK(h.count("SELECT count(*) FROM outside_applied WHERE handed_over IS DISTINCT FROM "
                  "'outside:' || event_id") == 0);
    CHECK(calls_of("acc-x") == std::vector<std::string>{"x-1", "x-2"});
    CHECK(calls_of("acc-z") == std::vector<std::string>{"z-1"});
    CHECK(calls_of("acc-y") == std::vector<std::string>{"boom-y", "boom-y"});  // its retry
}
