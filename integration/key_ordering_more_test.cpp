// Per-key ordering, continued (issue 20, item 6): entity lanes, a parked record
// holding only itself, back-pressure on records in batches, and the lane gauges,
// against real Redis, PostgreSQL and a mock Kafka cluster over TCP. The handler is
// order_recording (ordering_handlers.hpp): a row per applied record in apply order,
// its calls in flight counted, gate-* records waiting in it and held-* records
// NACKed until the test opens the gate.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka/producer.hpp"
#include "observability/metrics_text.hpp"
#include "ordered_run.hpp"

using namespace std::chrono_literals;
using exo::Ordering;
using exo::testing::order_recording;
using exo::testing::OrderedRun;
using exo::testing::payment;
using exo::testing::position;
using exo::testing::wait_until;
namespace ordering = exo::testing::ordering;

namespace {

// Produces each payment with its event id as its Kafka key, so only the sequence
// entity (not the Kafka key, which the harness sets to the account) groups an
// account's records.
void produce_keyed_by_event(const OrderedRun& run, const std::vector<exo::PaymentMessage>& all) {
    exo::KafkaProducer producer(exo::ProducerOptions{run.h.bootstrap(), {}});
    for (const auto& m : all)
        producer.produce({run.h.topic(), m.partition, m.payment.event_id, m.payment.json(), {}});
    producer.flush(30s);
}

// A payment whose value carries `pad` bytes more (a field the handler ignores),
// its event id as its Kafka key.
void produce_padded(const OrderedRun& run, const std::vector<exo::PaymentMessage>& all,
                    std::size_t pad) {
    exo::KafkaProducer producer(exo::ProducerOptions{run.h.bootstrap(), {}});
    for (const auto& m : all) {
        auto value = m.payment.json();
        value.pop_back();  // its closing brace
        value += ",\"pad\":\"" + std::string(pad, 'x') + "\"}";
        producer.produce({run.h.topic(), m.partition, m.payment.event_id, value, {}});
    }
    producer.flush(30s);
}

// Partition 0 and the lane totals of one status snapshot, printable for a failed wait.
struct Gauges {
    std::size_t queued = 0, in_flight = 0, parked = 0, bytes = 0;
    std::int64_t unfinished_window = 0;
    bool paused = false;
    std::size_t batches = 0, held_lanes = 0, waiting_behind_held = 0;
};

std::ostream& operator<<(std::ostream& out, const Gauges& g) {
    return out << "queued " << g.queued << ", in batch " << g.in_flight << ", parked " << g.parked
               << ", bytes " << g.bytes << ", unfinished window " << g.unfinished_window
               << ", paused " << g.paused << ", batches " << g.batches << ", held lanes "
               << g.held_lanes << ", waiting behind held " << g.waiting_behind_held;
}

Gauges gauges(const OrderedRun& run, int partition = 0) {
    const auto s = run.daemon->status();
    Gauges g{.batches = s.batches_in_flight,
             .held_lanes = s.held_lanes,
             .waiting_behind_held = s.waiting_behind_held};
    for (const auto& p : s.partitions) {
        if (p.partition.partition.value != partition) continue;
        g.queued = p.queued;
        g.in_flight = p.in_flight;
        g.parked = p.parked;
        g.bytes = p.bytes;
        g.unfinished_window = p.unfinished_window;
        g.paused = p.paused;
    }
    return g;
}

// Paused partitions in one status snapshot.
std::size_t paused_partitions(const OrderedRun& run) {
    std::size_t n = 0;
    for (const auto& p : run.daemon->status().partitions) n += p.paused ? 1 : 0;
    return n;
}

// Waits until the poll loop turned for `turns` x 100 ms more: the daemon kept
// polling (and would have fetched what it was not paused for) meanwhile.
void wait_for_polls(const OrderedRun& run, int turns = 5) {
    const auto since = run.daemon->status().last_poll;
    wait_until(
        "the poll loop to keep turning", 10s,
        [&] {
            return std::chrono::duration_cast<std::chrono::milliseconds>(
                       run.daemon->status().last_poll - since)
                .count();
        },
        [&](auto ms) { return ms >= 100 * turns; });
}

// The value of one series of the daemon's /metrics text (render_metrics, as the
// endpoint serves it), -1 when it is absent.
double sample(const std::string& metrics, const std::string& series) {
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return -1;
}

std::string metrics_of(const OrderedRun& run) {
    return exo::render_metrics(run.daemon->stats(), run.daemon->status(), run.daemon->ready(),
                               "test");
}

}  // namespace

TEST_CASE(
    "with ordering: entity, an entity's records are applied one at a time in partition order "
    "while other entities of its partition run at once, though each record has its own Kafka "
    "key") {
    auto options = order_recording("entityorder", Ordering::entity);
    options.with_sequence = true;  // strict: the entity is the account
    options.concurrency = 8;
    options.batch_size = 1;  // the gated record's batch holds no other account's lane
    options.slow_for = 20ms;
    OrderedRun run(options);
    // 30 accounts x 6 payments, interleaved; acc-0's first waits in the handler.
    constexpr int accounts = 30, per_account = 6;
    std::vector<exo::PaymentMessage> messages;
    for (int seq = 1; seq <= per_account; ++seq)
        for (int a = 0; a < accounts; ++a)
            messages.push_back(
                payment(fmt::format("{}-{}-{}", a == 0 && seq == 1 ? "gate" : "e", a, seq),
                        fmt::format("acc-{}", a), 1, seq));
    produce_keyed_by_event(run, messages);

    run.start();
    run.wait_for_gate("acc-0's first payment");
    wait_until(
        "the other 29 accounts' payments applied", 30s,
        [&] { return run.applied("account_id <> 'acc-0'"); },
        [](auto n) { return n == (accounts - 1) * per_account; });
    // acc-0's later payments wait in its lane, in no batch and not held: with a
    // lane per Kafka key they would be in batches, waiting on the entity's row lock
    // (lock_timeout 5 s), then held for a retry.
    wait_until(
        "acc-0's gated payment alone in a batch, its 5 others queued", 4s,
        [&] { return gauges(run); },
        [](const Gauges& g) {
            return g.in_flight == 1 && g.queued == per_account - 1 && g.held_lanes == 0;
        });

    run.finish();
    run.check_each_once(messages.size());
    for (const auto& [account, applied] : run.sequences_by_account()) {
        INFO("account " << account);
        CHECK(applied == "1 2 3 4 5 6");
    }
    CHECK(ordering::max_in_flight.load() > 1);
    CHECK(run.daemon->stats().retries.load() == 0);  // no lock timeout, no gap
    CHECK(run.daemon->stats().conflicts.load() == 0);
}

TEST_CASE(
    "with ordering: key, a record parked for a strict-sequence gap holds only itself: the other "
    "keys of its partition are applied meanwhile, and its predecessor produced later passes it "
    "and both apply in order") {
    auto options = order_recording("keyparked", Ordering::key);
    options.with_sequence = true;
    options.gap_timeout = 60000ms;  // never dead-lettered while the test runs
    options.batch_size = 1;
    OrderedRun run(options);
    std::vector<exo::PaymentMessage> first{payment("a-2", "acc-a", 1, 2)};
    for (int i = 1; i <= 10; ++i)
        first.push_back(payment(fmt::format("b-{}", i), fmt::format("acc-b{}", i), 1, 1));
    run.h.produce(first);

    run.start();
    wait_until(
        "the 10 records of other keys applied", 30s,
        [&] { return run.applied("event_id LIKE 'b-%'"); }, [](auto n) { return n == 10; });
    wait_until(
        "a-2 parked", 10s, [&] { return gauges(run); },
        [](const Gauges& g) { return g.parked == 1; });
    CHECK(run.applied("account_id = 'acc-a'") == 0);

    // Its predecessor arrives behind it, in its lane (the Kafka key is the account).
    run.h.produce({payment("a-1", "acc-a", 1, 1)});
    wait_until(
        "acc-a's two payments applied", 15s, [&] { return run.applied("account_id = 'acc-a'"); },
        [](auto n) { return n == 2; });

    run.finish();
    run.check_each_once(12);
    const auto events = run.events();
    CHECK(position(events, "a-1") < position(events, "a-2"));
    CHECK(position(events, "b-10") < position(events, "a-1"));
    CHECK(run.committed(0) == 12);
}

TEST_CASE(
    "with pipeline.max_in_flight reached by records queued and in batches, every partition is "
    "paused and no more is polled until they finish; then all are applied once and committed") {
    auto options = order_recording("maxinflight", Ordering::key);
    options.partitions = 4;
    options.concurrency = 2;
    options.batch_size = 10;
    OrderedRun run(options);
    run.h.mutable_config().pipeline.max_in_flight = 40;  // max_queued_per_partition: 1000
    // 100 records per partition, each of its own key; each batch waits on its first.
    std::vector<exo::PaymentMessage> messages;
    for (int p = 0; p < 4; ++p)
        for (int i = 0; i < 100; ++i)
            messages.push_back(
                payment(fmt::format("gate-{}-{}", p, i), fmt::format("acc-{}-{}", p, i), 1, 1, p));
    run.h.produce(messages);

    run.start();
    wait_until(
        "every partition paused", 30s, [&] { return paused_partitions(run); },
        [](auto n) { return n == 4; });
    wait_for_polls(run);
    // One poll (at most max(batch_size x 2, 100) records) may pass the limit.
    const std::uint64_t one_poll = 100;
    CHECK(run.daemon->stats().polled.load() <= 40 + one_poll);
    CHECK(paused_partitions(run) == 4);
    CHECK(sample(metrics_of(run), "exo_partitions_paused") == 4);
    CHECK(run.applied() == 0);

    run.finish();
    run.check_each_once(messages.size());
    for (int p = 0; p < 4; ++p) CHECK(run.committed(p) == 100);
}

TEST_CASE(
    "with pipeline.max_queued_per_partition, records in batches count: a partition whose "
    "records all sit in batches stays paused and polls nothing more") {
    auto options = order_recording("queuedinbatch", Ordering::key);
    options.concurrency = 2;
    options.batch_size = 16;  // the 16 records below fill the two slots' batches, 8 each
    OrderedRun run(options);
    run.h.mutable_config().pipeline.max_queued_per_partition = 8;
    std::vector<exo::PaymentMessage> messages;
    for (int i = 0; i < 16; ++i)
        messages.push_back(payment(fmt::format("gate-{}", i), fmt::format("acc-{}", i), 1, 1));
    run.h.produce(messages);

    run.start();
    wait_until(
        "the 16 records in batches, none queued, the partition paused", 30s,
        [&] { return gauges(run); },
        [](const Gauges& g) { return g.in_flight == 16 && g.queued == 0 && g.paused; });
    // What arrives now stays in Kafka: the partition is not resumed for its empty queue.
    run.h.produce({payment("late", "acc-late", 1, 1)});
    wait_for_polls(run);
    CHECK(gauges(run).paused);
    CHECK(run.daemon->stats().polled.load() == 16);

    run.finish();
    run.check_each_once(17);
    CHECK(run.committed(0) == 17);
}

TEST_CASE(
    "with pipeline.max_queued_bytes_per_partition, large records pause their partition by bytes "
    "far below max_queued_per_partition, nothing more is polled, and it resumes once they finish") {
    auto options = order_recording("bytespause", Ordering::key);
    options.concurrency = 2;
    options.batch_size = 1;  // two gate-* records wait in the handler, the rest queue
    OrderedRun run(options);
    run.h.mutable_config().pipeline.max_queued_bytes_per_partition = 64 * 1024;  // records: 1000
    std::vector<exo::PaymentMessage> messages;
    for (int i = 0; i < 10; ++i)
        messages.push_back(payment(fmt::format("gate-{}", i), fmt::format("acc-{}", i), 1, 1));
    produce_padded(run, messages, 10 * 1024);  // 10 records of over 10 KiB: over 100 KiB

    run.start();
    wait_until(
        "the partition paused by bytes", 30s, [&] { return gauges(run); },
        [](const Gauges& g) { return g.paused; });
    const auto polled = run.daemon->stats().polled.load();
    CHECK(polled <= 10);
    CHECK(gauges(run).bytes >= 64 * 1024);
    CHECK(gauges(run).queued + gauges(run).in_flight < 1000);
    // What arrives now stays in Kafka while the partition is over its bytes.
    produce_padded(run, {payment("late", "acc-late", 1, 1)}, 0);
    wait_for_polls(run);
    CHECK(gauges(run).paused);
    CHECK(run.daemon->stats().polled.load() == polled);

    run.finish();  // resumed at half: the late record is applied and committed too
    run.check_each_once(11);
    CHECK(run.committed(0) == 11);
}

TEST_CASE(
    "a record larger than pipeline.max_queued_bytes_per_partition on its own is still applied: "
    "the pause it causes never holds back what is queued") {
    auto options = order_recording("bytesalone", Ordering::key);
    OrderedRun run(options);
    run.h.mutable_config().pipeline.max_queued_bytes_per_partition = 4 * 1024;
    std::vector<exo::PaymentMessage> messages;
    for (int i = 0; i < 5; ++i)
        messages.push_back(payment(fmt::format("huge-{}", i), fmt::format("acc-{}", i), 1, 1));
    produce_padded(run, messages, 32 * 1024);  // each 8 times the bound

    run.start();
    run.finish();
    run.check_each_once(5);
    CHECK(run.committed(0) == 5);
}

TEST_CASE(
    "while a key is held by retries and another record waits in its handler, the status and "
    "/metrics show the held lane, the records waiting in it, the batch in flight and the "
    "partition's unfinished window, with other keys' later records finished") {
    auto options = order_recording("lanegauges", Ordering::key);
    options.batch_size = 1;
    OrderedRun run(options);
    // held-a at offset 0, its key's a-2 behind it, other keys' records, gate-c last.
    std::vector<exo::PaymentMessage> messages{payment("held-a", "acc-a", 1, 1)};
    for (int i = 1; i <= 10; ++i) {
        messages.push_back(payment(fmt::format("b-{}", i), fmt::format("acc-b{}", i), 1, 1));
        if (i == 5) messages.push_back(payment("a-2", "acc-a", 1, 2));
    }
    messages.push_back(payment("gate-c", "acc-c", 1, 1));
    run.h.produce(messages);

    run.start();
    run.wait_for_gate("gate-c");
    wait_until(
        "the 10 records of other keys applied", 30s,
        [&] { return run.applied("event_id LIKE 'b-%'"); }, [](auto n) { return n == 10; });
    // Between two tries held-a's lane is held, with a-2 behind held-a (the gauge
    // counts the records behind the holding one).
    const auto g = wait_until(
        "held-a's lane held between tries", 15s, [&] { return gauges(run); },
        [](const Gauges& g) { return g.held_lanes == 1 && g.waiting_behind_held == 1; });
    CHECK(g.batches >= 1);             // gate-c's
    CHECK(g.unfinished_window >= 12);  // from held-a (offset 0) to gate-c (offset 12)
    CHECK(run.applied("account_id = 'acc-a'") == 0);

    const auto metrics = metrics_of(run);
    INFO(metrics);
    CHECK(sample(metrics, "exo_batches_in_flight") >= 1);
    CHECK(
        sample(metrics, fmt::format("exo_unfinished_window_offsets{{topic=\"{}\",partition=\"0\"}}",
                                    run.h.topic())) >= 12);
    // The lane is held most of the time (backoff up to 500 ms, a try takes
    // milliseconds), so wait for a rendering that caught it held.
    wait_until(
        "/metrics showing the held lane", 15s,
        [&] {
            const auto m = metrics_of(run);
            return fmt::format("{} {}", sample(m, "exo_held_lanes"),
                               sample(m, "exo_records_waiting_behind_held"));
        },
        [](const std::string& s) { return s == "1 1"; });

    run.finish();
    run.check_each_once(messages.size());
    const auto events = run.events();
    CHECK(position(events, "held-a") < position(events, "a-2"));
    CHECK(run.committed(0) == static_cast<std::int64_t>(messages.size()));
}

// Serial (scripts/integration.sh): it stops and starts PostgreSQL.
TEST_CASE(
    "with 8 slots, once PostgreSQL is back one applied batch reports it up and the daemon ready, "
    "though other slots failed during the outage and have run nothing since" *
    doctest::test_suite("serial")) {
    auto options = order_recording("slotsup", Ordering::key);
    options.concurrency = 8;
    options.batch_size = 1;
    OrderedRun run(options);
    run.start();
    std::vector<exo::PaymentMessage> before;
    for (int i = 0; i < 16; ++i)
        before.push_back(payment(fmt::format("b-{}", i), fmt::format("acc-b{}", i), 1, 1));
    run.h.produce(before);
    wait_until(
        "the first 16 applied", 30s, [&] { return run.applied(); },
        [](std::int64_t n) { return n == 16; });

    exo::testing::services("postgres-stop");
    // Started again however the case ends, so a failure here leaves the next
    // cases their PostgreSQL.
    struct StartAgain {
        bool started = false;
        ~StartAgain() {
            if (!started) exo::testing::services("postgres-start");
        }
    } start_again;
    // One record, retried through the outage by whichever slot takes it each time.
    run.h.produce({payment("x-1", "acc-x", 1, 1)});
    wait_until(
        "PostgreSQL reported down", 30s, [&] { return run.daemon->status().postgres_up; },
        [](bool up) { return !up; });
    std::this_thread::sleep_for(3s);  // the outage: several tries by several slots
    exo::testing::services("postgres-start");
    start_again.started = true;

    wait_until(
        "x-1 applied", 60s, [&] { return run.applied("event_id = 'x-1'"); },
        [](std::int64_t n) { return n == 1; });
    // Nothing more to do, so most slots run nothing: the report must not wait for them.
    wait_until(
        "PostgreSQL reported up and the daemon ready", 15s,
        [&] { return run.daemon->status().postgres_up && run.daemon->ready(); },
        [](bool ok) { return ok; });
    run.finish();
    run.check_each_once(17);
}
