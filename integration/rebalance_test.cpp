// Per-key lanes across a rebalance and under back-pressure (issue 30), against real
// Redis, PostgreSQL and a mock Kafka cluster over TCP. The handler is order_recording
// (ordering_handlers.hpp): a row per applied record in apply order, gate-* records
// waiting in it until the test opens the gate, held-* records NACKed until then, and
// flaky-* records failing their first attempt only.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kafka/consumer.hpp"
#include "ordered_run.hpp"

using namespace std::chrono_literals;
using exo::Ordering;
using exo::testing::order_recording;
using exo::testing::OrderedRun;
using exo::testing::payment;
using exo::testing::position;
using exo::testing::unique_name;
using exo::testing::wait_until;
namespace ordering = exo::testing::ordering;

namespace {

// A group member that only joins: it notes that the group gave it an assignment.
class JoiningMember final : public exo::RebalanceListener {
public:
    void on_assigned(const std::vector<exo::TopicPartition>&) override { joined = true; }
    void on_revoked(const std::vector<exo::TopicPartition>&, bool) override {}
    bool joined = false;
};

// A second consumer joins the daemon's group and leaves it once it was given its
// assignment: two eager rebalances, each revoking the daemon's partitions and
// giving them back to it. The member subscribes to a topic of its own, so the range
// assignor never gives it one of the daemon's partitions: they come back to the
// same member whatever the order of the member ids (the mock cluster's are
// addresses).
void join_and_leave(OrderedRun& run) {
    const auto own_topic = unique_name("rebalance-other");
    run.h.cluster().create_topic(own_topic, 1);
    JoiningMember listener;
    exo::KafkaConsumer member(exo::ConsumerOptions{run.h.bootstrap(),
                                                   run.h.config().kafka.group_id,
                                                   {own_topic},
                                                   run.h.config().kafka.properties,
                                                   {}},
                              listener);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!listener.joined) {
        REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                        "the second member was given no assignment within 60 s");
        member.poll(10, 50ms);  // its topic is empty
    }
    member.close();  // leaves the group: the second rebalance
}

// The daemon's rebalance counts and whether it holds partition 0 now, printable for
// a failed wait.
struct Membership {
    std::uint64_t assignments = 0, revocations = 0;
    bool holds_partition = false;
};

std::ostream& operator<<(std::ostream& out, const Membership& m) {
    return out << m.assignments << " assignment(s), " << m.revocations << " revocation(s), "
               << (m.holds_partition ? "" : "not ") << "holding partition 0";
}

Membership membership(const OrderedRun& run) {
    Membership m{run.daemon->stats().assignments.load(), run.daemon->stats().revocations.load()};
    for (const auto& p : run.daemon->status().partitions)
        m.holds_partition = m.holds_partition || p.partition.partition.value == 0;
    return m;
}

// Records the daemon polled and tries of held-* records, printable for a failed wait.
struct HeldProgress {
    std::uint64_t polled = 0;
    int tries = 0;
};

std::ostream& operator<<(std::ostream& out, const HeldProgress& p) {
    return out << p.polled << " record(s) polled, " << p.tries << " held-* tries";
}

HeldProgress held_progress(const OrderedRun& run) {
    return {run.daemon->stats().polled.load(), ordering::held_tries.load()};
}

}  // namespace

TEST_CASE(
    "with ordering: key, a partition revoked while a batch outlives the drain and assigned back "
    "to the same member retries a failed record of a batch taken since: it applies once, before "
    "its key's later records, and the committed offset passes it") {
    auto options = order_recording("reassigned", Ordering::key);
    options.concurrency = 4;  // a slot for the new batches beside the one held by gate-s
    options.batch_size = 1;   // flaky-x alone in its batch, its key's later records behind it
    // Each join and leave is a rebalance, which waits session.timeout.ms less 1 s.
    options.session_timeout = 3000ms;
    OrderedRun run(options);
    run.h.mutable_config().pipeline.shutdown_timeout = 200ms;  // gate-s outlives every drain
    run.h.mutable_config().kafka.properties["partition.assignment.strategy"] = "range";  // eager
    run.start();
    wait_until(
        "the daemon assigned partition 0", 60s, [&] { return membership(run); },
        [](const Membership& m) { return m.holds_partition; });

    // gate-s (offset 0) waits in its handler through both rebalances: its batch is
    // still out when the partition comes back and new batches of it are taken.
    run.h.produce({payment("gate-s", "acc-s", 1, 1)});
    run.wait_for_gate("gate-s");
    join_and_leave(run);
    wait_until(
        "the daemon revoked twice (a join, a leave) and assigned partition 0 back", 60s,
        [&] { return membership(run); },
        [](const Membership& m) {
            return m.revocations >= 2 && m.assignments == m.revocations + 1 && m.holds_partition;
        });
    REQUIRE(ordering::gate_waiting.load() == 1);

    // flaky-x (offset 1) fails its first attempt in a batch taken after the
    // partition came back, and is put back; f-2 and f-3, of its key, are behind it.
    run.h.produce({payment("flaky-x", "acc-f", 1, 1), payment("f-2", "acc-f", 1, 2),
                   payment("f-3", "acc-f", 1, 3)});
    wait_until(
        "flaky-x retried and applied", 30s, [&] { return run.applied("event_id = 'flaky-x'"); },
        [](auto n) { return n == 1; });
    wait_until(
        "acc-f's three payments applied", 30s, [&] { return run.applied("account_id = 'acc-f'"); },
        [](auto n) { return n == 3; });
    CHECK(ordering::flaky_attempt("flaky-x") == 2);  // put back once, then retried
    CHECK(ordering::gate_waiting.load() == 1);       // all of it while gate-s's batch was still out
    CHECK(run.applied("event_id = 'gate-s'") == 0);

    run.finish();  // opens the gate and waits until the whole topic is committed
    CHECK(run.committed(0) == 4);
    run.check_each_once(4);
    const auto events = run.events();
    CHECK(position(events, "flaky-x") < position(events, "f-2"));
    CHECK(position(events, "f-2") < position(events, "f-3"));
}

TEST_CASE(
    "with ordering: key, records queued behind a key held by retries do not pause its partition: "
    "other keys' later records are fetched and applied while it is held, and the held key's "
    "records apply once, in order, after it is released") {
    OrderedRun run(order_recording("heldnopause", Ordering::key));
    run.h.mutable_config().pipeline.max_queued_per_partition = 20;
    run.start();

    // held-a NACKed until the gate opens, 30 more of its key behind it: more than
    // max_queued_per_partition, all in one lane.
    constexpr int held_key_records = 31;
    std::vector<exo::PaymentMessage> held{payment("held-a", "acc-a", 1, 1)};
    for (int seq = 2; seq <= held_key_records; ++seq)
        held.push_back(payment(fmt::format("a-{}", seq), "acc-a", 1, seq));
    run.h.produce(held);
    // At least max_queued_per_partition of them polled (a pause cannot stop the
    // poll that reaches the limit) and held-a tried: the lane is held.
    wait_until(
        "20 of acc-a's records polled and held-a tried", 60s, [&] { return held_progress(run); },
        [](const HeldProgress& p) { return p.polled >= 20 && p.tries >= 1; });

    // Other keys' records, produced after them, in two waves: each is applied
    // while acc-a is still held.
    for (int wave = 0; wave < 2; ++wave) {
        CAPTURE(wave);
        std::vector<exo::PaymentMessage> others;
        for (int i = 0; i < 20; ++i)
            others.push_back(
                payment(fmt::format("b-{}-{}", wave, i), fmt::format("acc-b{}-{}", wave, i), 1, 1));
        run.h.produce(others);
        wait_until(
            fmt::format("wave {}'s 20 records of other keys applied", wave), 30s,
            [&] { return run.applied(fmt::format("event_id LIKE 'b-{}-%'", wave)); },
            [](auto n) { return n == 20; });
    }
    CHECK(run.applied("account_id = 'acc-a'") == 0);  // held-a has not passed yet

    run.finish();  // releases held-a
    run.check_each_once(held_key_records + 40);
    std::string expected;
    for (int seq = 1; seq <= held_key_records; ++seq)
        expected += (seq == 1 ? "" : " ") + std::to_string(seq);
    CHECK(run.sequences_by_account().at("acc-a") == expected);
    CHECK(run.committed(0) == held_key_records + 40);
}

TEST_CASE(
    "with ordering: key, a key held by retries keeps half of max_queued_per_partition in memory, "
    "spills its later records and reads them again from Kafka once free: each applies once, in "
    "order, and other keys apply meanwhile") {
    auto options = order_recording("spill", Ordering::key);
    options.max_attempts = 1000;  // held-a retries until the gate opens
    OrderedRun run(options);
    run.h.mutable_config().pipeline.max_queued_per_partition = 20;  // a held key keeps 10
    // Held about a second between tries: the records below arrive while it is held.
    run.h.mutable_config().pipeline.retry_backoff_initial = 1000ms;
    run.h.mutable_config().pipeline.retry_backoff_max = 1000ms;
    run.start();

    run.h.produce({payment("held-a", "acc-a", 1, 1)});
    wait_until(
        "held-a tried", 30s, [&] { return held_progress(run); },
        [](const HeldProgress& p) { return p.tries >= 1; });
    constexpr int held_key_records = 41;
    std::vector<exo::PaymentMessage> behind;
    for (int seq = 2; seq <= held_key_records; ++seq)
        behind.push_back(payment(fmt::format("a-{}", seq), "acc-a", 1, seq));
    run.h.produce(behind);
    wait_until(
        "acc-a's records polled", 30s, [&] { return held_progress(run); },
        [](const HeldProgress& p) { return p.polled >= held_key_records; });

    std::vector<exo::PaymentMessage> others;
    for (int i = 0; i < 20; ++i)
        others.push_back(payment(fmt::format("b-{}", i), fmt::format("acc-b{}", i), 1, 1));
    run.h.produce(others);
    wait_until(
        "20 records of other keys applied", 30s, [&] { return run.applied("event_id LIKE 'b-%'"); },
        [](auto n) { return n == 20; });
    CHECK(run.applied("account_id = 'acc-a'") == 0);

    run.finish();  // releases held-a
    run.check_each_once(held_key_records + 20);
    std::string expected;
    for (int seq = 1; seq <= held_key_records; ++seq)
        expected += (seq == 1 ? "" : " ") + std::to_string(seq);
    CHECK(run.sequences_by_account().at("acc-a") == expected);
    CHECK(run.committed(0) == held_key_records + 20);
    CHECK(run.daemon->stats().reads_again >= 1);
}
