// The queue between the poll thread and a worker: scheduling/worker_inbox.hpp.
// Threads, no servers. Timing assertions are loose on purpose: they check that
// a wait happened or that nothing hung, never how long something took exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "scheduling/worker_inbox.hpp"

using namespace exo;
using namespace std::chrono_literals;
using Clock = WorkerInbox::Clock;

namespace {

const TopicPartition kP0{Topic{"orders"}, Partition{0}};
const TopicPartition kP1{Topic{"orders"}, Partition{1}};
const TopicPartition kP2{Topic{"refunds"}, Partition{0}};

// Never stopped: for the calls that must not see a stop.
std::stop_source never_stopped;

PendingRecord pending(const TopicPartition& tp, std::int64_t offset) {
    PendingRecord p;
    p.record.topic = tp.topic;
    p.record.partition = tp.partition;
    p.record.offset = Offset{offset};
    p.record.value = "v" + std::to_string(offset);
    return p;
}

std::vector<PendingRecord> pending_range(const TopicPartition& tp, std::int64_t first,
                                         std::int64_t last) {
    std::vector<PendingRecord> out;
    for (auto o = first; o <= last; ++o) out.push_back(pending(tp, o));
    return out;
}

// "orders[0]@3" for each record, in batch order.
std::vector<std::string> names(const std::vector<PendingRecord>& batch) {
    std::vector<std::string> out;
    out.reserve(batch.size());
    for (const auto& p : batch) {
        out.push_back(p.record.topic.value + "[" + std::to_string(p.record.partition.value) + "]@" +
                      std::to_string(p.record.offset.value));
    }
    return out;
}

// The offsets of one partition's records, in batch order.
std::vector<std::int64_t> offsets_of(const std::vector<PendingRecord>& batch,
                                     const TopicPartition& tp) {
    std::vector<std::int64_t> out;
    for (const auto& p : batch)
        if (p.record.topic_partition() == tp) out.push_back(p.record.offset.value);
    return out;
}

std::vector<std::int64_t> seq(std::int64_t first, std::int64_t last) {
    std::vector<std::int64_t> out;
    for (auto o = first; o <= last; ++o) out.push_back(o);
    return out;
}

// The batches each inbox has out, oldest first: most cases finish them in
// the order taken.
std::map<WorkerInbox*, std::deque<WorkerInbox::BatchId>> batches_out;

std::vector<PendingRecord> remember(WorkerInbox& inbox, WorkerInbox::Taken taken) {
    if (taken.records.empty()) return {};
    auto& out = batches_out[&inbox];
    // A new inbox's first batch: an earlier case's inbox may have had this address.
    if (taken.id == 1) out.clear();
    out.push_back(taken.id);
    return std::move(taken.records);
}

std::vector<PendingRecord> take(WorkerInbox& inbox, std::size_t max,
                                std::chrono::milliseconds linger, std::stop_token stop) {
    return remember(inbox, inbox.take_batch(max, linger, stop));
}

// Takes what is ready now (linger 0); the inbox must hold something ready.
std::vector<PendingRecord> take_now(WorkerInbox& inbox, std::size_t max = 100) {
    return take(inbox, max, 0ms, never_stopped.get_token());
}

// Finishes the oldest batch out of `inbox`.
void finish_oldest(WorkerInbox& inbox, std::vector<PendingRecord> requeue,
                   const std::map<Lane, Clock::time_point>& hold_until,
                   std::vector<WorkerInbox::Parked> parked = {}) {
    auto& out = batches_out[&inbox];
    REQUIRE_FALSE(out.empty());
    const auto id = out.front();
    out.pop_front();
    inbox.finish_batch(id, std::move(requeue), hold_until, std::move(parked));
}

// Records queued or parked, over every partition.
std::size_t queued_total(const WorkerInbox& inbox) {
    const auto t = inbox.totals();
    return t.queued + t.parked;
}

// True if a take finds nothing ready within `watch` (a stop then ends it);
// long enough for a ready record to come out at once on a loaded machine.
bool nothing_ready_within(WorkerInbox& inbox, std::chrono::milliseconds watch) {
    std::stop_source stop;
    std::thread stopper([&] {
        std::this_thread::sleep_for(watch);
        stop.request_stop();
    });
    auto taken = inbox.take_batch(100, 0ms, stop.get_token());
    stopper.join();
    if (!taken.records.empty()) inbox.finish_batch(taken.id, {}, {});
    return taken.records.empty();
}

void finish_all(WorkerInbox& inbox) {
    finish_oldest(inbox, {}, {});
}

// Runs `f` on a thread and joins it when destroyed, even if a REQUIRE throws.
class Background {
public:
    template <class F>
    explicit Background(F f) : thread_(std::move(f)) {}
    ~Background() {
        if (thread_.joinable()) thread_.join();
    }

private:
    std::thread thread_;
};

}  // namespace

TEST_SUITE("WorkerInbox batches") {
    TEST_CASE("records of one partition come out in the order they were pushed") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 2));
        inbox.push(pending_range(kP0, 3, 5));
        auto batch = take_now(inbox);
        CHECK(offsets_of(batch, kP0) == seq(0, 5));
        CHECK(batch.size() == 6);
    }

    TEST_CASE("records of several partitions keep each partition's order") {
        WorkerInbox inbox;
        std::vector<PendingRecord> mixed;
        for (int o = 0; o < 4; ++o) {
            mixed.push_back(pending(kP0, o));
            mixed.push_back(pending(kP1, 10 + o));
            mixed.push_back(pending(kP2, 20 + o));
        }
        inbox.push(std::move(mixed));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 12);
        CHECK(offsets_of(batch, kP0) == seq(0, 3));
        CHECK(offsets_of(batch, kP1) == seq(10, 13));
        CHECK(offsets_of(batch, kP2) == seq(20, 23));
    }

    TEST_CASE("a batch holds at most max records and the rest follow in order") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 9));
        auto first = take_now(inbox, 3);
        CHECK(offsets_of(first, kP0) == seq(0, 2));
        finish_all(inbox);
        CHECK(inbox.queued(kP0) == 7);
        auto second = take_now(inbox, 4);
        CHECK(offsets_of(second, kP0) == seq(3, 6));
        finish_all(inbox);
        auto third = take_now(inbox, 100);
        CHECK(offsets_of(third, kP0) == seq(7, 9));
        finish_all(inbox);
        CHECK(queued_total(inbox) == 0);
    }

    TEST_CASE("max is respected across partitions and no record is lost or repeated") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 4));
        inbox.push(pending_range(kP1, 0, 4));
        std::vector<std::int64_t> seen0, seen1;
        for (int round = 0; round < 10 && queued_total(inbox) > 0; ++round) {
            auto batch = take_now(inbox, 3);
            CHECK(batch.size() <= 3);
            for (auto o : offsets_of(batch, kP0)) seen0.push_back(o);
            for (auto o : offsets_of(batch, kP1)) seen1.push_back(o);
            finish_all(inbox);
        }
        CHECK(seen0 == seq(0, 4));
        CHECK(seen1 == seq(0, 4));
    }

    TEST_CASE("a batch in progress is reported until it is finished") {
        WorkerInbox inbox;
        CHECK_FALSE(inbox.batch_in_progress());
        inbox.push(pending_range(kP0, 0, 1));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);
        CHECK(inbox.batch_in_progress());
        CHECK(inbox.queued(kP0) == 0);  // taken records are no longer queued
        finish_all(inbox);
        CHECK_FALSE(inbox.batch_in_progress());
    }
}

TEST_SUITE("WorkerInbox requeue and hold") {
    TEST_CASE("requeued records go back to the front of their partition in their order") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 5));
        auto batch = take_now(inbox, 3);  // 0, 1, 2
        REQUIRE(offsets_of(batch, kP0) == seq(0, 2));
        inbox.push(pending_range(kP0, 6, 7));  // arrives while the batch runs
        std::vector<PendingRecord> requeue;
        requeue.push_back(std::move(batch[1]));
        requeue.push_back(std::move(batch[2]));
        finish_oldest(inbox, std::move(requeue), {});
        CHECK(inbox.queued(kP0) == 7);
        auto next = take_now(inbox);
        CHECK(offsets_of(next, kP0) == seq(1, 7));
    }

    TEST_CASE("requeued records keep what the retries learned") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 1);
        batch[0].attempts = 3;
        batch[0].nacks = 2;
        finish_oldest(inbox, std::move(batch), {});
        auto again = take_now(inbox);
        REQUIRE(again.size() == 1);
        CHECK(again[0].attempts == 3);
        CHECK(again[0].nacks == 2);
        CHECK(again[0].record.value == "v0");
    }

    TEST_CASE("a held partition yields nothing until its hold passes while others flow") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 1));
        inbox.push(pending_range(kP1, 0, 0));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 3);

        // p0's records were NACKed: back to the front, p0 held for a while.
        std::vector<PendingRecord> requeue;
        for (auto& p : batch)
            if (p.record.topic_partition() == kP0) requeue.push_back(std::move(p));
        const auto hold = Clock::now() + 500ms;
        finish_oldest(inbox, std::move(requeue), {{kP0, hold}});
        inbox.push(pending_range(kP0, 2, 2));  // behind the held records
        inbox.push(pending_range(kP1, 1, 2));

        auto other = take_now(inbox);
        CHECK(names(other) == std::vector<std::string>{"orders[1]@1", "orders[1]@2"});
        CHECK(inbox.queued(kP0) == 3);
        finish_all(inbox);

        // Only p0 is left, and it is held: this take waits for the hold.
        auto held = take_now(inbox);
        CHECK(Clock::now() >= hold);
        CHECK(offsets_of(held, kP0) == seq(0, 2));
        CHECK(held.size() == 3);
    }

    TEST_CASE("a hold already in the past does not hold the partition") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto batch = take_now(inbox);
        finish_oldest(inbox, std::move(batch), {{kP0, Clock::now() - 1s}});
        const auto before = Clock::now();
        auto again = take_now(inbox);
        CHECK(offsets_of(again, kP0) == seq(0, 0));
        CHECK(Clock::now() - before < 2s);
    }
}

TEST_SUITE("WorkerInbox parked records") {
    TEST_CASE("a parked record does not block the records behind it") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 5, 7));
        auto batch = take_now(inbox);
        REQUIRE(offsets_of(batch, kP0) == seq(5, 7));
        const auto due = Clock::now() + 500ms;
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[0]), due});  // 5 waits for a predecessor
        finish_oldest(inbox, {}, {}, std::move(parked));

        inbox.push(pending_range(kP0, 8, 9));
        auto behind = take_now(inbox);
        CHECK(offsets_of(behind, kP0) == seq(8, 9));
        CHECK(behind.size() == 2);
        CHECK(Clock::now() < due);  // otherwise the check above proved nothing
        finish_all(inbox);

        // Only the parked record is left: this take waits until it is due.
        auto back = take_now(inbox);
        CHECK(Clock::now() >= due);
        CHECK(offsets_of(back, kP0) == seq(5, 5));
        CHECK(back.size() == 1);
    }

    TEST_CASE("a due parked record comes before the queued records of its partition") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 5, 6));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[0]), Clock::now() + 100ms});
        finish_oldest(inbox, {}, {}, std::move(parked));
        inbox.push(pending_range(kP0, 7, 8));
        std::this_thread::sleep_for(120ms);
        auto next = take_now(inbox);
        CHECK(offsets_of(next, kP0) == std::vector<std::int64_t>{5, 7, 8});
    }

    TEST_CASE("parked records come back sorted by offset, whatever order they were parked in") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 1, 4));
        auto batch = take_now(inbox);
        REQUIRE(offsets_of(batch, kP0) == seq(1, 4));
        const auto due = Clock::now() - 1ms;  // due at once
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[3]), due});  // 4
        parked.push_back({std::move(batch[0]), due});  // 1
        parked.push_back({std::move(batch[2]), due});  // 3
        finish_oldest(inbox, {}, {}, std::move(parked));

        // A second batch parks 2, which must slot in between.
        inbox.push(pending_range(kP0, 9, 9));
        auto second = take_now(inbox, 3);
        CHECK(offsets_of(second, kP0) == std::vector<std::int64_t>{1, 3, 4});
        std::vector<WorkerInbox::Parked> again;
        again.reserve(second.size() + 1);
        for (auto& p : second) again.push_back({std::move(p), due});
        again.push_back({std::move(batch[1]), due});  // 2, never taken since
        finish_oldest(inbox, {}, {}, std::move(again));

        auto next = take_now(inbox);
        CHECK(offsets_of(next, kP0) == std::vector<std::int64_t>{1, 2, 3, 4, 9});
    }

    TEST_CASE("a parked record that is not due yet stays aside while due ones come out") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 1, 2));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[0]), Clock::now() + 10s});  // 1: much later
        parked.push_back({std::move(batch[1]), Clock::now() - 1ms});  // 2: due now
        finish_oldest(inbox, {}, {}, std::move(parked));
        auto next = take_now(inbox);
        CHECK(offsets_of(next, kP0) == seq(2, 2));
        CHECK(inbox.parked(kP0) == 1);
    }

    // queued() drives pausing, and pausing for parked records could keep out the
    // predecessor they wait for: it leaves them out; queued_total() has them.
    TEST_CASE("queued and in_flight leave parked records out, parked and queued_total count them") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 2));
        inbox.push(pending_range(kP1, 0, 0));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 4);
        CHECK(queued_total(inbox) == 0);
        CHECK(inbox.in_flight() == 4);  // all in the batch
        std::vector<WorkerInbox::Parked> parked;
        std::vector<PendingRecord> requeue;
        for (auto& p : batch) {
            if (p.record.topic_partition() != kP0) continue;
            if (p.record.offset.value == 0)
                parked.push_back({std::move(p), Clock::now() + 10s});
            else
                requeue.push_back(std::move(p));
        }
        finish_oldest(inbox, std::move(requeue), {}, std::move(parked));
        inbox.push(pending_range(kP1, 1, 1));
        CHECK(inbox.queued(kP0) == 2);
        CHECK(inbox.parked(kP0) == 1);
        CHECK(inbox.queued(kP1) == 1);
        CHECK(inbox.queued(kP2) == 0);
        CHECK(queued_total(inbox) == 4);
        CHECK(inbox.in_flight() == 3);  // the parked record left out
        const auto t = inbox.totals();
        CHECK(inbox.in_flight() == t.queued + t.in_batch);
    }
}

TEST_SUITE("WorkerInbox drop_partitions") {
    TEST_CASE("dropping discards the queued and parked records of those partitions only") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto batch = take_now(inbox);
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[0]), Clock::now() - 1ms});  // due
        finish_oldest(inbox, {}, {}, std::move(parked));
        inbox.push(pending_range(kP0, 1, 2));
        inbox.push(pending_range(kP1, 0, 1));
        REQUIRE(inbox.queued(kP0) == 2);
        REQUIRE(inbox.parked(kP0) == 1);

        CHECK(inbox.drop_partitions({kP0}, Clock::now() + 5s));
        CHECK(inbox.queued(kP0) == 0);
        CHECK(inbox.parked(kP0) == 0);
        CHECK(queued_total(inbox) == 2);
        auto next = take_now(inbox);
        CHECK(names(next) == std::vector<std::string>{"orders[1]@0", "orders[1]@1"});
    }

    TEST_CASE("dropping a held partition clears its hold for a later re-assignment") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto batch = take_now(inbox);
        finish_oldest(inbox, std::move(batch), {{kP0, Clock::now() + 1h}});
        CHECK(inbox.drop_partitions({kP0}, Clock::now() + 5s));
        inbox.push({pending(kP0, 7)});  // assigned again, fetched anew
        auto next = take_now(inbox);    // would hang for an hour if still held
        CHECK(offsets_of(next, kP0) == seq(7, 7));
    }

    TEST_CASE("dropping waits for the batch in progress that holds those partitions") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 1));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);

        std::atomic<bool> finished{false};
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[1]), Clock::now() - 1ms});
        std::vector<PendingRecord> requeue;
        requeue.push_back(std::move(batch[0]));
        {
            Background worker([&] {
                std::this_thread::sleep_for(150ms);
                finished = true;
                finish_oldest(inbox, std::move(requeue), {{kP0, Clock::now() + 1h}},
                              std::move(parked));
            });
            CHECK(inbox.drop_partitions({kP0}, Clock::now() + 10s));
            CHECK(finished.load());
        }
        CHECK_FALSE(inbox.batch_in_progress());
        // What the batch handed back belonged to the dropped partition: discarded.
        CHECK(inbox.queued(kP0) == 0);
        CHECK(queued_total(inbox) == 0);
    }

    TEST_CASE("dropping returns false when the batch outlives the deadline") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 1));
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);
        const auto before = Clock::now();
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 50ms));
        CHECK(Clock::now() - before >= 50ms);
        CHECK(inbox.batch_in_progress());

        // The batch ends late: its records, parked records and hold are discarded.
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(batch[1]), Clock::now() - 1ms});
        std::vector<PendingRecord> requeue;
        requeue.push_back(std::move(batch[0]));
        finish_oldest(inbox, std::move(requeue), {{kP0, Clock::now() + 1h}}, std::move(parked));
        CHECK(inbox.queued(kP0) == 0);
        CHECK_FALSE(inbox.batch_in_progress());

        inbox.push({pending(kP0, 2)});  // re-assigned later: not held by the old batch
        auto next = take_now(inbox);
        CHECK(offsets_of(next, kP0) == seq(2, 2));
    }

    TEST_CASE("records of other partitions in the same batch are kept at finish_batch") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        inbox.push({pending(kP1, 0)});
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        finish_oldest(inbox, std::move(batch), {});  // both requeued
        CHECK(inbox.queued(kP0) == 0);
        CHECK(inbox.queued(kP1) == 1);
    }

    TEST_CASE("dropping a partition not in the batch does not wait for the batch") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 1);
        inbox.push({pending(kP1, 0)});
        const auto before = Clock::now();
        CHECK(inbox.drop_partitions({kP1}, Clock::now() + 10s));
        CHECK(Clock::now() - before < 5s);
        CHECK(inbox.queued(kP1) == 0);
        CHECK(inbox.batch_in_progress());
        finish_oldest(inbox, std::move(batch), {});
        CHECK(inbox.queued(kP0) == 1);  // p0 was not dropped: its requeue is kept
    }
}

TEST_SUITE("WorkerInbox waiting") {
    TEST_CASE("take_batch returns empty promptly when stop is requested while it waits") {
        WorkerInbox inbox;
        std::stop_source stop;
        std::vector<PendingRecord> batch{pending(kP0, 99)};
        auto before = Clock::now();
        {
            Background worker([&] { batch = take(inbox, 10, 0ms, stop.get_token()); });
            std::this_thread::sleep_for(50ms);
            stop.request_stop();
        }
        CHECK(batch.empty());
        CHECK(Clock::now() - before < 3s);
    }

    TEST_CASE("take_batch returns empty at once when stop was already requested") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 2));
        std::stop_source stop;
        stop.request_stop();
        CHECK(take(inbox, 10, 1s, stop.get_token()).empty());
        CHECK(inbox.queued(kP0) == 3);  // nothing was taken and lost
        CHECK_FALSE(inbox.batch_in_progress());
    }

    TEST_CASE("take_batch stops lingering when stop is requested") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        std::stop_source stop;
        std::vector<PendingRecord> batch{pending(kP1, 99)};
        auto before = Clock::now();
        {
            Background worker([&] { batch = take(inbox, 10, 1h, stop.get_token()); });
            std::this_thread::sleep_for(50ms);
            stop.request_stop();
        }
        CHECK(batch.empty());
        CHECK(Clock::now() - before < 3s);
        CHECK(inbox.queued(kP0) == 1);
    }

    TEST_CASE("take_batch waits for a push when nothing is queued") {
        WorkerInbox inbox;
        std::vector<PendingRecord> batch;
        {
            Background worker([&] { batch = take_now(inbox); });
            std::this_thread::sleep_for(50ms);
            inbox.push({pending(kP2, 4)});
        }
        CHECK(names(batch) == std::vector<std::string>{"refunds[0]@4"});
    }

    TEST_CASE("with fewer than max ready, take_batch lingers and then returns what is there") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 1));
        const auto before = Clock::now();
        auto batch = take(inbox, 10, 100ms, never_stopped.get_token());
        const auto waited = Clock::now() - before;
        CHECK(offsets_of(batch, kP0) == seq(0, 1));
        CHECK(waited >= 90ms);
        CHECK(waited < 3s);
    }

    TEST_CASE(
        "records that waited a linger already (while the taker ran its last batch) are "
        "taken at once, not held another linger") {
        WorkerInbox inbox;
        auto records = pending_range(kP0, 0, 1);
        for (auto& r : records) r.polled_at = Clock::now() - 20s;
        inbox.push(std::move(records));
        const auto before = Clock::now();
        auto batch = take(inbox, 10, 10s, never_stopped.get_token());
        CHECK(offsets_of(batch, kP0) == seq(0, 1));
        // Lingering from the call, it would wait 10 s; from the records' poll, none.
        CHECK(Clock::now() - before < 5s);
    }

    TEST_CASE("lingering ends early once max records are ready") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 1));
        std::vector<PendingRecord> batch;
        const auto before = Clock::now();
        {
            Background worker([&] { batch = take(inbox, 3, 1h, never_stopped.get_token()); });
            std::this_thread::sleep_for(50ms);
            inbox.push(pending_range(kP0, 2, 4));
        }
        CHECK(Clock::now() - before < 5s);
        CHECK(offsets_of(batch, kP0) == seq(0, 2));
        CHECK(inbox.queued(kP0) == 2);
    }

    TEST_CASE("with max ready, take_batch does not linger") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 4));
        const auto before = Clock::now();
        auto batch = take(inbox, 5, 1h, never_stopped.get_token());
        CHECK(Clock::now() - before < 5s);
        CHECK(batch.size() == 5);
    }
}

// pipeline.concurrency above 1: a worker's threads take batches while others
// are still out (finished here oldest first; any order is covered further down).
TEST_SUITE("WorkerInbox two batches out") {
    TEST_CASE("a batch taken while another is out gets none of that batch's partitions") {
        WorkerInbox inbox;
        inbox.push(pending_range(kP0, 0, 1));
        auto first = take_now(inbox);
        REQUIRE(names(first) == std::vector<std::string>{"orders[0]@0", "orders[0]@1"});
        inbox.push(pending_range(kP0, 2, 3));
        inbox.push({pending(kP1, 0)});
        // p0 has records queued, but the first batch may yet put its records
        // back in front of them: only p1 is ready.
        auto second = take_now(inbox);
        CHECK(names(second) == std::vector<std::string>{"orders[1]@0"});
        finish_oldest(inbox, std::move(first), {});  // the first batch: both put back
        finish_oldest(inbox, {}, {});                // the second
        auto third = take_now(inbox);
        CHECK(offsets_of(third, kP0) == seq(0, 3));
        finish_all(inbox);
    }

    TEST_CASE("the next batch waits for a partition until the batch holding it finished") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto first = take_now(inbox);
        REQUIRE(first.size() == 1);
        inbox.push({pending(kP0, 1)});
        std::vector<PendingRecord> second;
        std::atomic<bool> taken{false};
        {
            Background other_taker([&] {
                second = take(inbox, 10, 0ms, never_stopped.get_token());
                taken = true;
            });
            std::this_thread::sleep_for(50ms);
            CHECK_FALSE(taken.load());     // p0@1 is queued but its partition is out
            finish_oldest(inbox, {}, {});  // p0@0 finished
        }
        CHECK(names(second) == std::vector<std::string>{"orders[0]@1"});
        finish_all(inbox);
    }

    TEST_CASE("finish_batch ends the oldest batch out, and only its partitions") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto first = take_now(inbox);
        inbox.push({pending(kP1, 0)});
        auto second = take_now(inbox);
        REQUIRE(names(second) == std::vector<std::string>{"orders[1]@0"});
        inbox.push({pending(kP0, 1)});
        inbox.push({pending(kP1, 1)});
        finish_oldest(inbox, {}, {});  // the first: p0 free again, p1 still out
        auto third = take_now(inbox);
        CHECK(names(third) == std::vector<std::string>{"orders[0]@1"});
        CHECK(inbox.batch_in_progress());
        finish_oldest(inbox, {}, {});  // the second
        finish_oldest(inbox, {}, {});  // the third
        CHECK(names(take_now(inbox)) == std::vector<std::string>{"orders[1]@1"});
        finish_all(inbox);
        CHECK_FALSE(inbox.batch_in_progress());
    }

    TEST_CASE("dropping partitions waits for every batch out that holds one of them") {
        WorkerInbox inbox;
        inbox.push({pending(kP0, 0)});
        auto first = take_now(inbox);
        inbox.push({pending(kP1, 0)});
        auto second = take_now(inbox);
        REQUIRE(second.size() == 1);
        finish_oldest(inbox, {}, {});  // the first
        // p1 is in the second batch, still out.
        CHECK_FALSE(inbox.drop_partitions({kP0, kP1}, Clock::now() + 10ms));
        finish_oldest(inbox, std::move(second), {});  // put back, but p1 was dropped
        CHECK(inbox.drop_partitions({kP0, kP1}, Clock::now() + 10ms));
        CHECK(inbox.queued(kP1) == 0);
    }
}

namespace {

// A record of `tp` in the lane of ordering key `key`.
PendingRecord keyed(const TopicPartition& tp, std::int64_t offset, std::string key) {
    auto p = pending(tp, offset);
    p.ordering_key = std::move(key);
    return p;
}

}  // namespace

TEST_SUITE("WorkerInbox lanes (ordering key or entity)") {
    TEST_CASE("a lane in a batch does not keep other lanes of its partition out of the next") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 0, "a"), keyed(kP0, 1, "b"), keyed(kP0, 2, "a")});
        auto first = take_now(inbox, 1);  // a@0 (the lanes come in key order)
        REQUIRE(offsets_of(first, kP0) == seq(0, 0));
        auto second = take_now(inbox);  // b@1 only: a's lane is out
        CHECK(offsets_of(second, kP0) == seq(1, 1));
        finish_all(inbox);
        finish_all(inbox);
        CHECK(offsets_of(take_now(inbox), kP0) == seq(2, 2));
        finish_all(inbox);
    }

    TEST_CASE("a lane's records stay in offset order, whichever batch finishes first") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 0, "a"), keyed(kP0, 1, "b")});
        auto a = inbox.take_batch(1, 0ms, never_stopped.get_token());
        auto b = inbox.take_batch(1, 0ms, never_stopped.get_token());
        REQUIRE(offsets_of(b.records, kP0) == seq(1, 1));
        inbox.push({keyed(kP0, 2, "a"), keyed(kP0, 3, "b")});
        // b's batch finishes first: b@3 is free, a@2 waits for a@0's batch.
        inbox.finish_batch(b.id, {}, {});
        auto next = inbox.take_batch(10, 0ms, never_stopped.get_token());
        CHECK(offsets_of(next.records, kP0) == seq(3, 3));
        // a@0 failed: back in front of a@2, in order.
        inbox.finish_batch(a.id, std::move(a.records), {});
        auto again = inbox.take_batch(10, 0ms, never_stopped.get_token());
        CHECK(offsets_of(again.records, kP0) == std::vector<std::int64_t>{0, 2});
        inbox.finish_batch(next.id, {}, {});
        inbox.finish_batch(again.id, {}, {});
        CHECK_FALSE(inbox.batch_in_progress());
    }

    TEST_CASE("a held lane holds only its own key while the partition's other keys flow") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 0, "a"), keyed(kP0, 1, "a"), keyed(kP0, 2, "b")});
        auto batch = take_now(inbox, 1);  // a@0
        REQUIRE(offsets_of(batch, kP0) == seq(0, 0));
        finish_oldest(inbox, std::move(batch), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        auto other = take_now(inbox);
        CHECK(offsets_of(other, kP0) == seq(2, 2));  // a@0 and a@1 wait for the hold
        const auto t = inbox.totals();
        CHECK(t.held_lanes == 1);
        CHECK(t.waiting_behind_held == 1);       // a@1 behind a@0
        CHECK(t.keys_waiting_behind_held == 0);  // a's own
        finish_all(inbox);
    }

    TEST_CASE("a held partition lane counts the other Kafka keys waiting behind its first record") {
        WorkerInbox inbox;
        auto with_key = [](std::int64_t offset, std::string key) {
            auto p = pending(kP0, offset);
            p.record.key = std::move(key);
            return p;
        };
        inbox.push({with_key(0, "a"), with_key(1, "b"), with_key(2, "a"), with_key(3, "c"),
                    with_key(4, "b")});
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 5);
        finish_oldest(inbox, std::move(batch), {{kP0, Clock::now() + 1h}});
        const auto t = inbox.totals();
        CHECK(t.held_lanes == 1);
        CHECK(t.waiting_behind_held == 4);
        CHECK(t.keys_waiting_behind_held == 2);  // b and c; a is the holder's
    }

    TEST_CASE("a stalled lane marks its partition stalled until cleared, and only that lane") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 0, "a"), keyed(kP0, 1, "b")});
        auto batch = take_now(inbox, 1);  // a@0
        batch[0].stalled = true;
        finish_oldest(inbox, std::move(batch), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        CHECK(inbox.stalled(kP0));
        CHECK_FALSE(inbox.stalled(kP1));
        CHECK(inbox.stalled_lanes() == 1);
        CHECK(offsets_of(take_now(inbox), kP0) == seq(1, 1));  // b is not held
        finish_all(inbox);
        inbox.clear_stalled(Lane{kP0, "a"});
        CHECK(inbox.stalled_lanes() == 0);
    }

    TEST_CASE(
        "a batch takes one taker's share of what is ready, but not less than its share "
        "of max") {
        WorkerInbox inbox(4);
        std::vector<PendingRecord> records;
        for (int i = 0; i < 200; ++i) records.push_back(keyed(kP0, i, "k" + std::to_string(i)));
        inbox.push(std::move(records));
        CHECK(take_now(inbox, 100).size() == 50);  // 200 ready / 4 takers
        CHECK(take_now(inbox, 100).size() == 38);  // 150 / 4, rounded up
        CHECK(take_now(inbox, 100).size() == 28);  // 112 / 4
        CHECK(take_now(inbox, 100).size() == 25);  // 84 / 4 is 21: 100 / 4 at least
        for (int i = 0; i < 4; ++i) finish_all(inbox);
    }

    TEST_CASE("lanes are forgotten once empty, so distinct keys leave nothing behind") {
        WorkerInbox inbox;
        std::vector<PendingRecord> records;
        for (int i = 0; i < 20000; ++i)
            records.push_back(keyed(kP0, i, "key-" + std::to_string(i)));
        inbox.push(std::move(records));
        CHECK(inbox.totals().lanes == 20000);
        std::size_t taken = 0;
        while (taken < 20000) {
            auto batch = take_now(inbox, 1000);
            taken += batch.size();
            finish_all(inbox);
        }
        const auto t = inbox.totals();
        CHECK(t.lanes == 0);
        CHECK(t.queued == 0);
        CHECK(t.in_batch == 0);
    }

    TEST_CASE(
        "dropping a partition waits for every batch holding one of its lanes and discards "
        "what they put back") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 0, "a"), keyed(kP0, 1, "b")});
        auto a = inbox.take_batch(1, 0ms, never_stopped.get_token());
        auto b = inbox.take_batch(1, 0ms, never_stopped.get_token());
        REQUIRE(b.records.size() == 1);
        CHECK(inbox.in_batch(kP0) == 2);
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        inbox.finish_batch(a.id, std::move(a.records), {});              // put back after the drop
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));  // b still out
        inbox.finish_batch(b.id, std::move(b.records), {});
        CHECK(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        CHECK(inbox.queued(kP0) == 0);
        CHECK(inbox.in_batch(kP0) == 0);
        CHECK(inbox.totals().lanes == 0);
    }

    TEST_CASE("a batch of a dropped partition does not hold the records of its re-assignment") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 0, "a")});
        auto batch = take_now(inbox);
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        inbox.push({keyed(kP0, 0, "a")});  // the partition is back, read again from 0
        finish_oldest(inbox, std::move(batch), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        CHECK(offsets_of(take_now(inbox), kP0) == seq(0, 0));  // would hang for an hour if held
        finish_all(inbox);
    }

    TEST_CASE(
        "a partition re-assigned to this member keeps the put-backs of batches taken after "
        "the drop") {
        WorkerInbox inbox(2);
        inbox.push({keyed(kP0, 0, "a")});
        auto old_batch = inbox.take_batch(1, 0ms, never_stopped.get_token());  // lane a, out
        REQUIRE(old_batch.records.size() == 1);
        // The revoke's drain gives up on it; the partition comes back at once.
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        inbox.push({keyed(kP0, 1, "b"), keyed(kP0, 2, "b")});
        auto fresh = inbox.take_batch(10, 0ms, never_stopped.get_token());
        REQUIRE(offsets_of(fresh.records, kP0) == seq(1, 2));
        // b@1 failed: both go back, held briefly.
        inbox.finish_batch(fresh.id, std::move(fresh.records),
                           {{Lane{kP0, "b"}, Clock::now() + 1ms}});
        REQUIRE(inbox.queued(kP0) == 2);
        // The batch out at the drop still loses what it puts back.
        inbox.finish_batch(old_batch.id, std::move(old_batch.records), {});
        CHECK(inbox.queued(kP0) == 2);
        auto retried = inbox.take_batch(10, 0ms, never_stopped.get_token());
        CHECK(offsets_of(retried.records, kP0) == seq(1, 2));
        inbox.finish_batch(retried.id, {}, {});
    }

    TEST_CASE("dropping waits only for the batches out at the drop, not for later ones") {
        WorkerInbox inbox(2);
        inbox.push({keyed(kP0, 0, "a")});
        auto old_batch = inbox.take_batch(1, 0ms, never_stopped.get_token());
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        inbox.push({keyed(kP0, 1, "b")});  // back, and a new batch of it out
        auto fresh = inbox.take_batch(1, 0ms, never_stopped.get_token());
        REQUIRE(fresh.records.size() == 1);
        inbox.finish_batch(old_batch.id, {}, {});
        // A second revoke now waits for `fresh` only, which is out: not done.
        CHECK_FALSE(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        inbox.finish_batch(fresh.id, std::move(fresh.records), {});
        CHECK(inbox.queued(kP0) == 0);  // `fresh` was out at that second drop
        CHECK(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
    }

    TEST_CASE("a shorter hold does not shorten a lane's longer one") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 5, "a")});
        auto head = take_now(inbox);
        // a@5 goes back held for an hour (its dead letter could not be recorded);
        // a@3 of the same key, older, was parked and is due now.
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({keyed(kP0, 3, "a"), Clock::now()});
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}},
                      std::move(parked));
        auto older = take_now(inbox);  // older than the head: it may go while held
        REQUIRE(offsets_of(older, kP0) == seq(3, 3));
        finish_oldest(inbox, {}, {{Lane{kP0, "a"}, Clock::now() + 1ms}});
        std::this_thread::sleep_for(20ms);
        CHECK(nothing_ready_within(inbox, 100ms));  // a@5 is still held for the hour
        CHECK(inbox.queued(kP0) == 1);
    }

    TEST_CASE("a due parked record younger than its held lane's head waits for the hold") {
        WorkerInbox inbox;
        inbox.push({keyed(kP0, 5, "a")});
        auto head = take_now(inbox);
        // a@5 could not be recorded as a dead letter yet: back, held an hour; a@7
        // of the same key was parked and is due now.
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({keyed(kP0, 7, "a"), Clock::now()});
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}},
                      std::move(parked));
        CHECK(nothing_ready_within(inbox, 100ms));
        CHECK(inbox.parked(kP0) == 1);
        CHECK(inbox.queued(kP0) == 1);
    }
}

TEST_SUITE("WorkerInbox held keys spill") {
    TEST_CASE("a held key queues at most its cap, spills the rest, and other keys still queue") {
        WorkerInbox inbox(1, 3);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        for (std::int64_t o = 1; o <= 6; ++o) inbox.push({keyed(kP0, o, "a")});
        inbox.push({keyed(kP0, 7, "b")});
        CHECK(inbox.queued(kP0) == 4);   // a@0, a@1, a@2 and b@7
        CHECK(inbox.spilled(kP0) == 4);  // a@3 to a@6
        // What the poll loop asks on every turn: with it 0 it would skip the
        // held keys' walk that reads spilled offsets again (PausePolicy::quiet).
        CHECK(inbox.spilled_total() == 4);
        CHECK(inbox.spilled_total() == inbox.totals().spilled);
        const auto held = inbox.held_keys(kP0);
        CHECK(held.queued == 3);
        CHECK(held.spilled == 4);
        CHECK_FALSE(held.read_again_from);  // a is still held
        CHECK(offsets_of(take_now(inbox), kP0) == seq(7, 7));
        finish_all(inbox);
    }

    TEST_CASE("a spilled key's later records spill too, so they cannot overtake") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 100ms}});
        inbox.push({keyed(kP0, 1, "a")});    // spilled: the lane is held and full
        std::this_thread::sleep_for(150ms);  // the hold is over
        inbox.push({keyed(kP0, 2, "a")});    // not held any more, but behind a@1
        CHECK(inbox.spilled(kP0) == 2);
        auto retried = take_now(inbox);
        CHECK(offsets_of(retried, kP0) == seq(0, 0));
        finish_all(inbox);
        // Free and empty: read again from a@1.
        const auto held = inbox.held_keys(kP0);
        REQUIRE(held.read_again_from);
        CHECK(held.read_again_from->value == 1);
    }

    TEST_CASE("records read again go back in order and the others read again are dropped") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 100ms}});
        inbox.push({keyed(kP0, 1, "a"), keyed(kP0, 2, "b"), keyed(kP0, 3, "a")});
        CHECK(inbox.spilled(kP0) == 2);
        std::this_thread::sleep_for(150ms);
        auto batch = offsets_of(take_now(inbox), kP0);  // a@0 and b@2, lane by lane
        std::sort(batch.begin(), batch.end());
        CHECK(batch == std::vector<std::int64_t>{0, 2});
        finish_all(inbox);
        // The partition read again from 1: a@1, b@2 (already done), a@3.
        CHECK(inbox.push_rereads({keyed(kP0, 1, "a"), keyed(kP0, 2, "b"), keyed(kP0, 3, "a")}, 1)
                  .empty());
        CHECK(inbox.spilled(kP0) == 0);
        CHECK(inbox.queued(kP0) == 2);
        CHECK(offsets_of(take_now(inbox), kP0) == std::vector<std::int64_t>{1, 3});
        finish_all(inbox);
        CHECK(inbox.totals().lanes == 0);
    }

    TEST_CASE("a record read again while its key is held and full again stays spilled") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        inbox.push({keyed(kP0, 1, "a"), keyed(kP0, 2, "a")});
        CHECK(inbox.push_rereads({keyed(kP0, 1, "a"), keyed(kP0, 2, "a")}, 1).empty());
        CHECK(inbox.spilled(kP0) == 2);
        CHECK(inbox.queued(kP0) == 1);
        // The window delivered them: they are not gone when it ends.
        CHECK(inbox.forget_unread_spilled(kP0, Offset{3}, 1).empty());
        CHECK(inbox.spilled(kP0) == 2);
    }

    TEST_CASE("a second delivery of a spilled record is spilled once") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        inbox.push({keyed(kP0, 1, "a"), keyed(kP0, 2, "a")});
        inbox.push({keyed(kP0, 2, "a")});
        CHECK(inbox.spilled(kP0) == 2);
    }

    TEST_CASE(
        "a second delivery of a record handed over before the spill goes through, not into "
        "the spilled ones") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        inbox.push({keyed(kP0, 2, "a")});  // spilled
        inbox.push({keyed(kP0, 1, "a")});  // older than the spilled one, never spilled
        CHECK(inbox.spilled(kP0) == 1);
        CHECK(inbox.queued(kP0) == 2);
    }

    TEST_CASE(
        "spilled records a read-again window passed without delivering are gone from Kafka "
        "and given back to be finished") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 100ms}});
        inbox.push(
            {keyed(kP0, 1, "a"), keyed(kP0, 2, "a"), keyed(kP0, 3, "a"), keyed(kP0, 4, "a")});
        REQUIRE(inbox.spilled(kP0) == 4);
        std::this_thread::sleep_for(150ms);
        REQUIRE(offsets_of(take_now(inbox), kP0) == seq(0, 0));
        finish_all(inbox);
        // Read again from 1: a@1 and a@2 were compacted away, a@3 comes.
        auto gone = inbox.push_rereads({keyed(kP0, 3, "a")}, 7);
        REQUIRE(gone.size() == 2);
        CHECK(gone[0].offset.value == 1);
        CHECK(gone[1].offset.value == 2);
        CHECK(inbox.queued(kP0) == 1);  // a@3
        // The window ends at 5 without a@4: gone too.
        auto tail = inbox.forget_unread_spilled(kP0, Offset{5}, 7);
        REQUIRE(tail.size() == 1);
        CHECK(tail[0].offset.value == 4);
        CHECK(inbox.spilled(kP0) == 0);
        CHECK(offsets_of(take_now(inbox), kP0) == seq(3, 3));
        finish_all(inbox);
        CHECK(inbox.totals().lanes == 0);
    }

    TEST_CASE("the partition lane never spills: ordering partition pauses instead") {
        WorkerInbox inbox(1, 1);
        inbox.push({pending(kP0, 0)});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{kP0, Clock::now() + 1h}});
        inbox.push(pending_range(kP0, 1, 5));
        CHECK(inbox.spilled(kP0) == 0);
        CHECK(inbox.queued(kP0) == 6);
        CHECK(inbox.held_keys(kP0).queued == 0);  // counted for the pause
    }

    TEST_CASE("dropping a partition forgets its spilled records") {
        WorkerInbox inbox(1, 1);
        inbox.push({keyed(kP0, 0, "a")});
        auto head = take_now(inbox);
        finish_oldest(inbox, std::move(head), {{Lane{kP0, "a"}, Clock::now() + 1h}});
        inbox.push({keyed(kP0, 1, "a")});
        REQUIRE(inbox.spilled(kP0) == 1);
        CHECK(inbox.drop_partitions({kP0}, Clock::now() + 10ms));
        CHECK(inbox.spilled(kP0) == 0);
        CHECK(inbox.totals().lanes == 0);
    }
}

TEST_SUITE("WorkerInbox bytes") {
    TEST_CASE(
        "bytes follow records as they are pushed, taken, requeued, finished and dropped, "
        "partition by partition") {
        WorkerInbox inbox;
        auto p0 = pending_range(kP0, 0, 2);
        p0[1].record.value.assign(5000, 'x');
        p0[2].record.headers.assign(10, RecordHeader{"n", "v"});
        std::size_t p0_bytes = 0;
        for (const auto& p : p0) p0_bytes += memory_bytes(p.record);
        const auto p1_bytes = memory_bytes(pending(kP1, 0).record);
        inbox.push(std::move(p0));
        inbox.push(pending_range(kP1, 0, 0));
        CHECK(inbox.queued_bytes(kP0) == p0_bytes);
        CHECK(inbox.queued_bytes(kP1) == p1_bytes);
        CHECK(inbox.in_flight_bytes() == p0_bytes + p1_bytes);

        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 4);
        CHECK(inbox.queued_bytes(kP0) == 0);
        CHECK(inbox.in_batch_bytes(kP0) == p0_bytes);
        CHECK(inbox.in_batch_bytes(kP1) == p1_bytes);
        CHECK(inbox.in_flight_bytes() == p0_bytes + p1_bytes);

        // kP0's records go back, kP1's finishes: its bytes are gone.
        std::vector<PendingRecord> requeue;
        for (auto& p : batch)
            if (p.record.topic_partition() == kP0) requeue.push_back(std::move(p));
        finish_oldest(inbox, std::move(requeue), {});
        CHECK(inbox.queued_bytes(kP0) == p0_bytes);
        CHECK(inbox.in_batch_bytes(kP0) == 0);
        CHECK(inbox.queued_bytes(kP1) == 0);
        CHECK(inbox.in_flight_bytes() == p0_bytes);

        CHECK(inbox.drop_partitions({kP0}, Clock::now()));
        CHECK(inbox.queued_bytes(kP0) == 0);
        CHECK(inbox.in_flight_bytes() == 0);
    }

    TEST_CASE("parked and spilled records count no bytes, and a held key's lane reports its own") {
        WorkerInbox inbox(1, 2);
        inbox.push({keyed(kP0, 0, "a"), keyed(kP0, 1, "b")});
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 2);
        std::vector<WorkerInbox::Parked> parked;
        std::vector<PendingRecord> requeue;
        for (auto& p : batch) {
            if (p.ordering_key == "b")
                parked.push_back({std::move(p), Clock::now() + 1h});
            else
                requeue.push_back(std::move(p));
        }
        finish_oldest(inbox, std::move(requeue), {{Lane{kP0, "a"}, Clock::now() + 1h}},
                      std::move(parked));
        const auto one = memory_bytes(keyed(kP0, 0, "a").record);
        CHECK(inbox.queued_bytes(kP0) == one);                 // a@0, held; b@1 parked: not counted
        inbox.push({keyed(kP0, 2, "a"), keyed(kP0, 3, "a")});  // a@3 spills (cap 2)
        CHECK(inbox.spilled(kP0) == 1);
        CHECK(inbox.queued_bytes(kP0) == 2 * one);
        CHECK(inbox.held_keys(kP0).queued_bytes == 2 * one);
        CHECK(inbox.in_flight_bytes() == 2 * one);
    }
}

TEST_SUITE("WorkerInbox parked bound") {
    // Parks every record of `batch` (the oldest batch out), due at once unless `due` says.
    std::vector<TopicPartition> park_all(WorkerInbox & inbox, std::vector<PendingRecord> batch,
                                         Clock::time_point due = Clock::now() - 1ms) {
        std::vector<WorkerInbox::Parked> parked;
        for (auto& p : batch) parked.push_back({std::move(p), due});
        auto& out = batches_out[&inbox];
        REQUIRE_FALSE(out.empty());
        const auto id = out.front();
        out.pop_front();
        return inbox.finish_batch(id, {}, {}, std::move(parked));
    }

    TEST_CASE(
        "new gaps beyond max_parked_per_partition are dead-lettered at once, not parked, "
        "and go back to the front of their lane in offset order") {
        WorkerInbox inbox(1, 0, ParkLimits{3, 0});
        inbox.push(pending_range(kP0, 1, 5));
        auto batch = take_now(inbox);
        REQUIRE(offsets_of(batch, kP0) == seq(1, 5));
        const auto refused = park_all(inbox, std::move(batch), Clock::now() + 10s);
        CHECK(refused == std::vector<TopicPartition>{kP0, kP0});
        CHECK(inbox.parked(kP0) == 3);
        CHECK(inbox.parked_load(kP0).records == 3);
        CHECK(inbox.queued(kP0) == 2);
        // The two refused come out at once (unheld), in order, as dead letters
        // without a dedup row that take their gap sighting with them.
        auto letters = take_now(inbox);
        CHECK(offsets_of(letters, kP0) == seq(4, 5));
        for (const auto& p : letters) {
            REQUIRE(p.dead_letter);
            CHECK(p.dead_letter->reason.find("pipeline.max_parked_per_partition") !=
                  std::string::npos);
            CHECK_FALSE(p.dead_letter->record_key);
            CHECK(p.dead_letter->clears_gap);
            CHECK_FALSE(p.parked);
        }
    }

    TEST_CASE(
        "a parked record taken back into a batch keeps its place: parked again it is never "
        "refused, and a new gap meanwhile is") {
        WorkerInbox inbox(2, 0, ParkLimits{2, 0});
        inbox.push(pending_range(kP0, 1, 2));
        CHECK(park_all(inbox, take_now(inbox)).empty());
        auto back = take_now(inbox);  // both parked records, due at once
        REQUIRE(offsets_of(back, kP0) == seq(1, 2));
        CHECK(inbox.parked(kP0) == 0);
        CHECK(inbox.parked_load(kP0).records == 2);  // still theirs while out
        // Another lane's batch meets a new gap meanwhile: the partition is at its bound.
        auto three = pending(kP0, 3);
        three.ordering_key = "acc-3";  // another lane of the partition
        inbox.push({std::move(three)});
        auto other = take_now(inbox);
        REQUIRE(offsets_of(other, kP0) == seq(3, 3));
        batches_out[&inbox].push_front(batches_out[&inbox].back());  // finish it first
        batches_out[&inbox].pop_back();
        CHECK(park_all(inbox, std::move(other)) == std::vector<TopicPartition>{kP0});
        CHECK(park_all(inbox, std::move(back)).empty());
        CHECK(inbox.parked(kP0) == 2);
        CHECK(inbox.parked_load(kP0).records == 2);  // counted once, not again
    }

    TEST_CASE(
        "a record that leaves the parked ones (finished, or put back in its queue) frees "
        "its place, and parked again competes for one as a new gap") {
        WorkerInbox inbox(1, 0, ParkLimits{1, 0});
        inbox.push(pending_range(kP0, 1, 1));
        CHECK(park_all(inbox, take_now(inbox)).empty());
        auto back = take_now(inbox);
        finish_oldest(inbox, std::move(back), {});  // requeued (a NACK, a failed batch)
        CHECK(inbox.parked_load(kP0).records == 0);
        inbox.push(pending_range(kP0, 2, 2));
        auto again = take_now(inbox);
        REQUIRE(offsets_of(again, kP0) == seq(1, 2));
        // 2 meets its gap first and takes the free place; 1 holds none any more: refused.
        std::vector<PendingRecord> gaps;
        gaps.push_back(std::move(again[1]));
        gaps.push_back(std::move(again[0]));
        CHECK(park_all(inbox, std::move(gaps)) == std::vector<TopicPartition>{kP0});
        CHECK(inbox.parked(kP0) == 1);
        CHECK(inbox.parked_load(kP0).records == 1);
        CHECK(take_now(inbox).size() == 2);  // 2 (due) and 1 (a dead letter)
        finish_oldest(inbox, {}, {});        // both finished
        CHECK(inbox.parked_load(kP0).records == 0);
        CHECK(inbox.parked(kP0) == 0);
    }

    TEST_CASE(
        "new gaps are refused once the partition's parked bytes reach "
        "max_parked_bytes_per_partition; other partitions are bounded apart") {
        auto big = [](const TopicPartition& tp, std::int64_t o) {
            auto p = pending(tp, o);
            p.record.value.assign(4000, 'x');
            return p;
        };
        std::size_t one = 0;
        {
            WorkerInbox probe;
            probe.push({big(kP0, 1)});
            one = probe.queued_bytes(kP0);
        }
        WorkerInbox inbox(1, 0, ParkLimits{0, 2 * one});
        inbox.push({big(kP0, 1), big(kP0, 2), big(kP0, 3), big(kP1, 1)});
        auto batch = take_now(inbox);
        REQUIRE(batch.size() == 4);
        CHECK(park_all(inbox, std::move(batch), Clock::now() + 10s) ==
              std::vector<TopicPartition>{kP0});
        CHECK(inbox.parked_load(kP0).records == 2);
        CHECK(inbox.parked_load(kP0).bytes == 2 * one);
        CHECK(inbox.parked_load(kP1).records == 1);
    }

    TEST_CASE("a dropped partition's parked places go with it") {
        WorkerInbox inbox(1, 0, ParkLimits{1, 0});
        inbox.push(pending_range(kP0, 1, 1));
        CHECK(park_all(inbox, take_now(inbox), Clock::now() + 10s).empty());
        REQUIRE(inbox.drop_partitions({kP0}, Clock::now() + 1s));
        CHECK(inbox.parked_load(kP0).records == 0);
        inbox.push(pending_range(kP0, 1, 1));  // assigned again
        CHECK(park_all(inbox, take_now(inbox), Clock::now() + 10s).empty());
    }
}
