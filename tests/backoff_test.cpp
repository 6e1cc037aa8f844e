// Exponential backoff with equal jitter: core/backoff.hpp. No servers.
#include <doctest/doctest.h>

#include <chrono>
#include <limits>

#include "core/backoff.hpp"

using namespace exo;
using std::chrono::milliseconds;

namespace {

const Backoff kBackoff{milliseconds(100), milliseconds(10000)};

// The largest jitter below 1 (the contract's range is [0, 1)).
constexpr double kAlmostOne = 1.0 - std::numeric_limits<double>::epsilon();

}  // namespace

TEST_SUITE("Backoff") {
    TEST_CASE("attempt 1 waits between half and all of the initial delay") {
        CHECK(kBackoff.delay(1, 0.0) == milliseconds(50));
        CHECK(kBackoff.delay(1, 0.5) == milliseconds(75));
        CHECK(kBackoff.delay(1, 1.0) == milliseconds(100));
        CHECK(kBackoff.delay(1, kAlmostOne) <= milliseconds(100));
        CHECK(kBackoff.delay(1, kAlmostOne) >= milliseconds(99));
    }

    TEST_CASE("each attempt doubles the delay") {
        CHECK(kBackoff.delay(2, 1.0) == milliseconds(200));
        CHECK(kBackoff.delay(3, 1.0) == milliseconds(400));
        CHECK(kBackoff.delay(4, 1.0) == milliseconds(800));
        CHECK(kBackoff.delay(4, 0.0) == milliseconds(400));
    }

    TEST_CASE("the delay is capped at max") {
        // 100 * 2^7 = 12800 > 10000
        CHECK(kBackoff.delay(8, 1.0) == milliseconds(10000));
        CHECK(kBackoff.delay(8, 0.0) == milliseconds(5000));
        CHECK(kBackoff.delay(1000, 1.0) == milliseconds(10000));
        CHECK(kBackoff.delay(std::numeric_limits<int>::max(), 1.0) == milliseconds(10000));
    }

    TEST_CASE("the delay never decreases from one attempt to the next") {
        for (int attempt = 1; attempt < 40; ++attempt)
            CHECK(kBackoff.delay(attempt, 0.3) <= kBackoff.delay(attempt + 1, 0.3));
    }

    TEST_CASE("jitter scales every attempt into [50%, 100%] of its base") {
        for (int attempt = 1; attempt <= 12; ++attempt) {
            const auto full = kBackoff.delay(attempt, 1.0);
            for (double j = 0.0; j < 1.0; j += 0.125) {
                const auto d = kBackoff.delay(attempt, j);
                CHECK(d >= full / 2);
                CHECK(d <= full);
            }
        }
    }

    TEST_CASE("jitter outside [0, 1] is clamped") {
        CHECK(kBackoff.delay(2, -3.0) == milliseconds(100));
        CHECK(kBackoff.delay(2, 7.0) == milliseconds(200));
    }

    TEST_CASE("an attempt below 1 waits like the first") {
        CHECK(kBackoff.delay(0, 1.0) == milliseconds(100));
        CHECK(kBackoff.delay(-5, 1.0) == milliseconds(100));
    }

    TEST_CASE("an initial delay above max is capped at max") {
        Backoff b{milliseconds(5000), milliseconds(1000)};
        CHECK(b.delay(1, 1.0) == milliseconds(1000));
        CHECK(b.delay(1, 0.0) == milliseconds(500));
    }

    TEST_CASE("a zero initial delay retries at once") {
        Backoff b{milliseconds(0), milliseconds(1000)};
        CHECK(b.delay(5, 1.0) == milliseconds(0));
    }
}
