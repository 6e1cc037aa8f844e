#include <doctest/doctest.h>

#include "retention/prune_throttle.hpp"

using exo::PruneThrottle;
using namespace std::chrono_literals;

namespace {
const PruneThrottle::Clock::time_point t0{std::chrono::seconds(1000)};
}

TEST_CASE("a chunk at the cap waits until its share of the second has passed") {
    const PruneThrottle throttle(10000);
    CHECK(throttle.next_start(t0, 5000) == t0 + 500ms);
    CHECK(throttle.next_start(t0, 10000) == t0 + 1s);
}

TEST_CASE("successive chunks of a backlog are held to the cap, not to the cap per chunk") {
    const PruneThrottle throttle(50000);
    auto start = t0;
    for (int chunk = 0; chunk < 10; ++chunk) start = throttle.next_start(start, 5000);
    CHECK(start == t0 + 1s);  // 50,000 rows took a second
}

TEST_CASE("without a cap, and after an empty chunk, the next chunk starts at once") {
    CHECK(PruneThrottle(0).next_start(t0, 1000000) == t0);
    CHECK(PruneThrottle(10000).next_start(t0, 0) == t0);
}

TEST_CASE("a chunk slower than its share leaves no wait and earns no burst") {
    const PruneThrottle throttle(10000);
    const auto due = throttle.next_start(t0, 1000);  // 100 ms share
    // The chunk took 300 ms: the pruner starts the next once `due` has passed,
    // which it has; the next chunk's share counts from its own start.
    const auto next_started = t0 + 300ms;
    CHECK(due < next_started);
    CHECK(throttle.next_start(next_started, 1000) == next_started + 100ms);
}
