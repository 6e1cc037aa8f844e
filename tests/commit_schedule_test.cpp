#include <doctest/doctest.h>

#include "scheduling/commit_schedule.hpp"

using exo::CommitSchedule;
using namespace std::chrono_literals;

namespace {
const CommitSchedule::Clock::time_point t0{std::chrono::seconds(1000)};
}

TEST_CASE("a periodic commit is due one interval after the start, whatever is in flight") {
    CommitSchedule schedule(1000ms, t0);
    CHECK_FALSE(schedule.due(t0 + 999ms, 5, 0));
    CHECK(schedule.due(t0 + 1000ms, 5, 0));
    CHECK(schedule.due(t0 + 1000ms, 0, 0));
}

TEST_CASE("a drained pipeline commits after a tenth of the interval, not a whole one") {
    CommitSchedule schedule(1000ms, t0);
    CHECK_FALSE(schedule.due(t0 + 50ms, 0, 10));  // drained, but within a tenth of the start
    CHECK(schedule.due(t0 + 100ms, 0, 10));
    CHECK_FALSE(schedule.due(t0 + 100ms, 1, 10));  // something still in flight
    CHECK_FALSE(schedule.due(t0 + 100ms, 0, 0));   // nothing finished since the last commit
}

TEST_CASE(
    "after a commit nothing is due again until something more has finished or the "
    "interval passed") {
    CommitSchedule schedule(1000ms, t0);
    schedule.sent(t0 + 100ms, 10, false);  // nothing was committable
    CHECK_FALSE(schedule.due(t0 + 300ms, 0, 10));
    CHECK(schedule.due(t0 + 300ms, 0, 11));
    CHECK(schedule.due(t0 + 1100ms, 0, 10));
    CHECK_FALSE(schedule.due(t0 + 1099ms, 3, 11));
}

TEST_CASE("a queued commit holds the next one back until the broker answers") {
    CommitSchedule schedule(1000ms, t0);
    schedule.sent(t0 + 100ms, 10, true);
    CHECK(schedule.awaiting_answer());
    // A slow broker: drained again, and the interval passed, but one request is enough.
    CHECK_FALSE(schedule.due(t0 + 300ms, 0, 20));
    CHECK_FALSE(schedule.due(t0 + 5s, 0, 20));
    schedule.answered();
    CHECK_FALSE(schedule.awaiting_answer());
    CHECK(schedule.due(t0 + 5s, 0, 20));
}

TEST_CASE("an answer that never comes holds commits back for a bounded time only") {
    CommitSchedule schedule(1000ms, t0);
    schedule.sent(t0, 10, true);
    const auto bound = 1000ms * CommitSchedule::kUnansweredIntervals;
    CHECK_FALSE(schedule.due(t0 + bound - 1ms, 0, 20));
    CHECK(schedule.due(t0 + bound, 0, 20));
}
