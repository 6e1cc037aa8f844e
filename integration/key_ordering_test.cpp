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

#include "ordered_run.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::Ordering;
using exo::testing::order_recording;
using exo::testing::OrderedRun;
using exo::testing::payment;
using exo::testing::position;
using exo::testing::wait_until;
namespace ordering = exo::testing::ordering;

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

    run.wait_for_gate("gate-a", 60s);
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
    // What ordering: key would free, as the status (and /metrics) shows it: the
    // ten other keys queued behind held-a, between two of its tries.
    wait_until(
        "the ten b keys shown waiting behind held-a", 15s,
        [&] { return run.daemon->status().keys_waiting_behind_held; },
        [](std::size_t n) { return n == 10; });

    run.finish();
    std::vector<std::string> produced;
    for (const auto& m : workload) produced.push_back(m.payment.event_id);
    CHECK(run.events() == produced);
}
