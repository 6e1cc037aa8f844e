// The lane scheduler's index of ready lanes and its heap of due times
// (scheduling/worker_inbox.hpp): a taker finds held lanes and parked records
// when they become ready, without a walk of every lane. Threads, no servers.
// Timing assertions only check that a wait happened (a lane is never taken
// before its time) or that nothing hung (a generous stop), never how long.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
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

PendingRecord keyed(const std::string& key, std::int64_t offset) {
    PendingRecord p;
    p.record.topic = kP0.topic;
    p.record.partition = kP0.partition;
    p.record.offset = Offset{offset};
    p.record.value = "v" + std::to_string(offset);
    p.ordering_key = key;
    return p;
}

std::vector<PendingRecord> records(std::initializer_list<std::pair<const char*, std::int64_t>> r) {
    std::vector<PendingRecord> out;
    for (const auto& [key, offset] : r) out.push_back(keyed(key, offset));
    return out;
}

// A take that a stop ends after `deadline` if nothing comes (a broken index
// would otherwise hang the test run).
WorkerInbox::Taken take_within(WorkerInbox& inbox, std::size_t max,
                               std::chrono::milliseconds deadline) {
    std::stop_source stop;
    std::jthread stopper([&stop, deadline](std::stop_token done) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        cv.wait_for(lock, done, deadline, [] { return false; });
        stop.request_stop();
    });
    return inbox.take_batch(max, 0ms, stop.get_token());
}

std::vector<std::string> keys_of(const WorkerInbox::Taken& taken) {
    std::vector<std::string> out;
    for (const auto& r : taken.records) out.push_back(r.ordering_key);
    return out;
}

}  // namespace

TEST_SUITE("WorkerInbox index of ready lanes") {
    TEST_CASE("a lane held until t is not taken before t, and is taken after it without a push") {
        WorkerInbox inbox;
        inbox.push(records({{"a", 0}}));
        auto first = take_within(inbox, 10, 10s);
        REQUIRE(first.records.size() == 1);
        const auto until = Clock::now() + 300ms;
        const Lane lane = first.records.front().lane();
        inbox.finish_batch(first.id, std::move(first.records), {{lane, until}});

        // Nothing else is queued: only the due time can wake the taker.
        auto again = take_within(inbox, 10, 20s);
        const auto at = Clock::now();
        REQUIRE(again.records.size() == 1);
        CHECK(at >= until);
        CHECK(keys_of(again) == std::vector<std::string>{"a"});
    }

    TEST_CASE("a parked record is taken once due, not before, and the lanes behind it flow") {
        WorkerInbox inbox;
        inbox.push(records({{"a", 0}, {"a", 1}}));
        auto first = take_within(inbox, 1, 10s);
        REQUIRE(first.records.size() == 1);
        const auto due = Clock::now() + 300ms;
        std::vector<WorkerInbox::Parked> parked;
        parked.push_back({std::move(first.records.front()), due});
        inbox.finish_batch(first.id, {}, {}, std::move(parked));

        // Offset 1 of the same key flows past its parked predecessor.
        auto behind = take_within(inbox, 10, 10s);
        REQUIRE(behind.records.size() == 1);
        CHECK(behind.records.front().record.offset.value == 1);
        inbox.finish_batch(behind.id, {}, {});

        auto back = take_within(inbox, 10, 20s);
        const auto at = Clock::now();
        REQUIRE(back.records.size() == 1);
        CHECK(back.records.front().record.offset.value == 0);
        CHECK(at >= due);
    }

    TEST_CASE("held lanes become ready in the order of their due times, not of their names") {
        WorkerInbox inbox;
        inbox.push(records({{"a", 0}, {"b", 1}, {"c", 2}}));
        auto first = take_within(inbox, 10, 10s);
        REQUIRE(first.records.size() == 3);
        const auto now = Clock::now();
        // Far enough apart that a slow taker still sees one at a time.
        std::map<Lane, Clock::time_point> holds{{first.records[0].lane(), now + 1500ms},
                                                {first.records[1].lane(), now + 300ms},
                                                {first.records[2].lane(), now + 900ms}};
        inbox.finish_batch(first.id, std::move(first.records), holds);

        std::vector<std::string> order;
        for (int i = 0; i < 3; ++i) {
            auto taken = take_within(inbox, 10, 20s);
            REQUIRE(taken.records.size() == 1);
            order.push_back(taken.records.front().ordering_key);
            inbox.finish_batch(taken.id, {}, {});
        }
        CHECK(order == std::vector<std::string>{"b", "c", "a"});
    }

    TEST_CASE("a lane in a batch is never given to a second batch, and is ready again after") {
        WorkerInbox inbox(2);
        inbox.push(records({{"a", 0}}));
        auto first = take_within(inbox, 10, 10s);
        REQUIRE(keys_of(first) == std::vector<std::string>{"a"});

        inbox.push(records({{"a", 1}, {"b", 2}}));
        auto second = take_within(inbox, 10, 10s);
        CHECK(keys_of(second) == std::vector<std::string>{"b"});
        // a@1 waits for its lane's batch: a third take finds nothing.
        auto third = take_within(inbox, 10, 300ms);
        CHECK(third.records.empty());

        inbox.finish_batch(second.id, {}, {});
        inbox.finish_batch(first.id, {}, {});
        auto after = take_within(inbox, 10, 10s);
        REQUIRE(after.records.size() == 1);
        CHECK(after.records.front().record.offset.value == 1);
    }

    TEST_CASE(
        "a hold that ends while its lane is in a batch still lets the lane go after the batch") {
        WorkerInbox inbox;
        inbox.push(records({{"a", 0}}));
        auto first = take_within(inbox, 10, 10s);
        REQUIRE(first.records.size() == 1);
        const Lane lane = first.records.front().lane();
        inbox.finish_batch(first.id, std::move(first.records), {{lane, Clock::now() + 100ms}});
        auto held = take_within(inbox, 10, 20s);  // after the hold
        REQUIRE(held.records.size() == 1);
        // Put back with a hold already over: ready at once.
        inbox.finish_batch(held.id, std::move(held.records), {{lane, Clock::now() - 1ms}});
        auto again = take_within(inbox, 10, 10s);
        CHECK(again.records.size() == 1);
    }
}
