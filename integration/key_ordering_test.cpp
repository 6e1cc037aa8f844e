// Per-key ordering (issue 20; bindings[].ordering, pipeline.concurrency) against
// real Redis, PostgreSQL and a mock Kafka cluster over TCP. The handler
// (ordering_handlers.hpp) writes a row per applied record with a serial taken as
// it ran, counts its calls in flight, and holds records on cue until the test
// opens a gate; the Kafka record key is the payment's account.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ordering_handlers.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::Ordering;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;
using exo::testing::wait_until;
namespace ordering = exo::testing::ordering;

namespace {

exo::testing::HarnessOptions order_recording(const char* name, Ordering ordering) {
    return {.name = name,
            .partitions = 1,
            .with_sequence = false,  // exo's strict sequences would hide a key applied out of order
            .workers = 1,
            .handler = "order_recording",
            .slow_for = 0ms,       // the handler's pause per call
            .max_attempts = 1000,  // a held-* record is retried, never dead-lettered
            .ordering = ordering,
            .concurrency = 4};
}

// A harness whose handler records its order, with a fresh table and counters, and
// its daemon.
struct OrderedRun {
    explicit OrderedRun(exo::testing::HarnessOptions options) : h(std::move(options)) {
        ordering::reset();
        ordering::create_applied_order_table(h.postgres_uri());
    }
    void start() { daemon.emplace(h.config(), h.registry(), h.bootstrap()); }
    // Opens the gate, waits until the group committed the whole topic, stops the daemon.
    void finish() {
        ordering::gate_open = true;
        REQUIRE(h.wait_until_consumed(90s));
        daemon->stop();
    }
    std::int64_t applied(const std::string& where = "true") const {
        return h.count("SELECT count(*) FROM applied_order WHERE " + where);
    }
    std::int64_t committed(int partition) const {
        return exo::testing::committed_offset(h.bootstrap(), h.config().kafka.group_id, h.topic(),
                                              partition);
    }
    // Event ids in the order they were applied.
    std::vector<std::string> events() const {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction tx(c);
        std::vector<std::string> out;
        for (const auto& row : tx.exec("SELECT event_id FROM applied_order ORDER BY serial"))
            out.push_back(row[0].as<std::string>());
        return out;
    }
    // Per account, its sequence ids in the order they were applied ("1 2 3").
    std::map<std::string, std::string> sequences_by_account() const {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction tx(c);
        std::map<std::string, std::string> out;
        for (const auto& row :
             tx.exec("SELECT account_id, sequence_id FROM applied_order ORDER BY serial")) {
            auto& sequences = out[row[0].as<std::string>()];
            sequences += (sequences.empty() ? "" : " ") + row[1].as<std::string>();
        }
        return out;
    }
    // Each event id applied exactly once.
    void check_each_once(std::size_t expected) const {
        auto all = events();
        CHECK(all.size() == expected);
        CHECK(std::set<std::string>(all.begin(), all.end()).size() == expected);
    }
    PipelineHarness h;
    std::optional<RunningDaemon> daemon;
    ordering::OpenGateOnExit gate;  // destroyed first: a gate-* call returns before the stop
};

std::size_t position(const std::vector<std::string>& events, const std::string& event) {
    auto it = std::find(events.begin(), events.end(), event);
    REQUIRE_MESSAGE(it != events.end(), event << " was never applied");
    return static_cast<std::size_t>(it - events.begin());
}

}  // namespace

TEST_CASE(
    "with ordering: key, records of different keys of one partition are in flight at once and "
    "each key's records are applied in partition order, each once") {
    auto options = order_recording("keyorder", Ordering::key);
    options.concurrency = 8;
    options.batch_size = 4;   // many batches, so the worker's 8 slots all have work
    options.slow_for = 20ms;  // each call sleeps: calls of different keys overlap if run at once
    OrderedRun run(options);
    // 30 accounts x 6 payments, interleaved: each account's payments are 30 offsets apart.
    constexpr int accounts = 30, per_account = 6;
    std::vector<exo::PaymentMessage> messages;
    for (int seq = 1; seq <= per_account; ++seq)
        for (int a = 0; a < accounts; ++a)
            messages.push_back(
                payment(fmt::format("k-{}-{}", a, seq), fmt::format("acc-{}", a), 1, seq));
    run.h.produce(messages);

    run.start();
    run.finish();

    run.check_each_once(messages.size());
    const auto sequences = run.sequences_by_account();
    CHECK(sequences.size() == accounts);
    for (const auto& [account, applied] : sequences) {
        INFO("account " << account);
        CHECK(applied == "1 2 3 4 5 6");
    }
    // One partition: only its keys' lanes let calls overlap.
    CHECK(ordering::max_in_flight.load() > 1);
}

TEST_CASE(
    "with ordering: key, a partition's committed offset stays at a record still in its handler "
    "while later records of other keys finish, and reaches the end once it finished") {
    auto options = order_recording("keyoffsets", Ordering::key);
    options.partitions = 2;
    options.batch_size = 1;  // gate-a alone in its batch: the records around it can finish
    OrderedRun run(options);
    std::vector<exo::PaymentMessage> p0;
    for (int i = 0; i < 26; ++i)
        p0.push_back(i == 5 ? payment("gate-a", "acc-a", 1, 1)
                            : payment(fmt::format("o-{}", i), fmt::format("acc-{}", i), 1, 1));
    run.start();
    run.h.produce(p0);

    wait_until(
        "gate-a in its handler", 60s, [] { return ordering::gate_waiting.load(); },
        [](int n) { return n == 1; });
    wait_until(
        "the 25 records of other keys applied", 60s, [&] { return run.applied(); },
        [](auto n) { return n == 25; });
    wait_until(
        "partition 0 committed up to gate-a (offset 5)", 30s, [&] { return run.committed(0); },
        [](auto next) { return next == 5; });
    // A commit after the others finished: partition 1's first record committed
    // means the poll thread committed what it could, partition 0's too.
    run.h.produce({payment("m-1", "acc-m", 1, 1, 1)});
    wait_until(
        "partition 1's record committed", 60s, [&] { return run.committed(1); },
        [](auto next) { return next == 1; });
    CHECK(ordering::gate_waiting.load() == 1);
    CHECK(run.committed(0) == 5);

    run.finish();
    CHECK(run.committed(0) == 26);
    run.check_each_once(27);
}

namespace {

// held-a (account a), then five records of other accounts, a's second payment,
// and five more of other accounts, all in partition 0.
std::vector<exo::PaymentMessage> held_workload() {
    std::vector<exo::PaymentMessage> out{payment("held-a", "acc-a", 1, 1)};
    for (int i = 1; i <= 10; ++i) {
        out.push_back(payment(fmt::format("b-{}", i), fmt::format("acc-b{}", i), 1, 1));
        if (i == 5) out.push_back(payment("a-2", "acc-a", 1, 2));
    }
    return out;
}

}  // namespace

TEST_CASE(
    "with ordering: key, a key held by retries does not hold the other keys of its partition, "
    "only its own later records") {
    OrderedRun run(order_recording("keyheld", Ordering::key));
    run.start();
    run.h.produce(held_workload());

    wait_until(
        "the 10 records of other keys applied behind the held one", 60s,
        [&] { return run.applied("event_id LIKE 'b-%'"); }, [](auto n) { return n == 10; });
    CHECK(ordering::held_tries.load() >= 1);
    CHECK(run.applied("account_id = 'acc-a'") == 0);  // a-2 waits behind held-a

    run.finish();
    run.check_each_once(12);
    const auto events = run.events();
    CHECK(position(events, "held-a") < position(events, "a-2"));
    CHECK(position(events, "b-10") < position(events, "held-a"));
}

TEST_CASE(
    "with ordering: partition, a record held by retries holds every record behind it in its "
    "partition") {
    OrderedRun run(order_recording("partheld", Ordering::partition));
    run.start();
    const auto workload = held_workload();
    run.h.produce(workload);

    wait_until(
        "held-a tried three times", 60s, [] { return ordering::held_tries.load(); },
        [](int n) { return n >= 3; });
    CHECK(run.applied() == 0);

    run.finish();
    std::vector<std::string> produced;
    for (const auto& m : workload) produced.push_back(m.payment.event_id);
    CHECK(run.events() == produced);
}
