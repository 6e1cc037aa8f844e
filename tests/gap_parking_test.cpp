// Records parked on a strict-sequence gap (scheduling/gap_parking.hpp): the
// delay ladder toward the gap timeout and the per-partition bound. Pure.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "scheduling/gap_parking.hpp"

using namespace exo;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

const TopicPartition kP3{Topic{"payments"}, Partition{3}};

// The parks of one record waiting out a whole gap with the defaults (100 ms
// initial backoff, gap_timeout_ms 60000): every delay until the gap times out.
std::vector<milliseconds> parks_until_timeout(milliseconds initial, milliseconds gap_timeout) {
    std::vector<milliseconds> out;
    milliseconds waited{0};
    while (waited < gap_timeout) {
        const auto d = park_delay(static_cast<int>(out.size()) + 1, initial, gap_timeout, waited);
        out.push_back(d);
        waited += d;
    }
    return out;
}

}  // namespace

TEST_SUITE("gap parking") {
    TEST_CASE(
        "while a gap is young the park delay doubles from half the initial backoff up to 1 s, "
        "however often the record was parked") {
        const std::vector<milliseconds> expected = {50ms,  100ms,  200ms,  400ms,
                                                    800ms, 1000ms, 1000ms, 1000ms};
        for (std::size_t n = 0; n < expected.size(); ++n) {
            CAPTURE(n);
            CHECK(park_delay(static_cast<int>(n) + 1, 100ms, 60s, 0ms) == expected[n]);
        }
        CHECK(park_delay(40, 100ms, 60s, 3999ms) == 1s);
        CHECK(park_delay(1000000, 100ms, 60s, 0ms) == 1s);  // no overflow
    }

    TEST_CASE(
        "from 4 s of age the park delay is a quarter of the age in powers of two seconds, up to "
        "a quarter of the gap timeout") {
        CHECK(park_delay(1, 100ms, 60s, 4s) == 1s);
        CHECK(park_delay(1, 100ms, 60s, 7999ms) == 1s);
        CHECK(park_delay(1, 100ms, 60s, 8s) == 2s);
        CHECK(park_delay(1, 100ms, 60s, 16s) == 4s);
        CHECK(park_delay(1, 100ms, 60s, 33s) == 8s);
        CHECK(park_delay(1, 100ms, 600s, 400s) == 30s);  // a quarter would be 100 s
    }

    TEST_CASE(
        "the park delay depends only on the number of parks and the age's bracket, so "
        "records parked together come back together") {
        for (int parks = 1; parks < 12; ++parks) {
            CAPTURE(parks);
            CHECK(park_delay(parks, 100ms, 60s, 0ms) == park_delay(parks, 100ms, 60s, 3s));
            CHECK(park_delay(parks, 100ms, 60s, 8s) == park_delay(parks, 100ms, 60s, 15s));
        }
    }

    TEST_CASE("the last park ends as the gap times out, not a ceiling later") {
        CHECK(park_delay(12, 100ms, 60s, 57s) == 3s);
        CHECK(park_delay(1, 100ms, 60s, 59999ms) == 1ms);
        // Already past it (a clock skew): the ladder as it is, never zero.
        CHECK(park_delay(12, 100ms, 60s, 61s) == 8s);
        CHECK(park_delay(1, 1ms, 60s, 0ms) == 1ms);
    }

    TEST_CASE("a record waiting out a 60 s gap is tried two dozen times, not once a second") {
        const auto parks = parks_until_timeout(100ms, 60s);
        // 50 ms doubling to 1 s until 4 s of age (8), then 1 s until 8 s (4),
        // 2 s until 16 s (4), 4 s until 32 s (4), 8 s, the last cut at 60 s (4).
        CHECK(parks.size() == 24);
        milliseconds total{0};
        for (auto d : parks) total += d;
        CHECK(total == 60s);
    }

    TEST_CASE("the ceiling is kept within 1 s and 30 s whatever the gap timeout") {
        CHECK(park_delay(30, 100ms, 2s, 1s) == 1s);      // a quarter would be 500 ms
        CHECK(park_delay(30, 100ms, 1h, 40min) == 30s);  // a quarter would be 15 min
        const auto hour = parks_until_timeout(100ms, 1h);
        CHECK(hour.size() < 150);  // not 3,600: 30 s apart past 2 min of age
    }

    TEST_CASE(
        "a new gap may park below both bounds and is refused at either, naming the "
        "partition, the bound and its key") {
        const ParkLimits limits{3, 10000};
        CHECK_FALSE(refuse_park(kP3, {2, 9999}, limits));
        const auto by_count = refuse_park(kP3, {3, 100}, limits);
        REQUIRE(by_count);
        CHECK(*by_count ==
              "strict-sequence gap: the parked records of partition payments[3] are at the bound "
              "3 (pipeline.max_parked_per_partition); raise it or fill the gap, then replay this "
              "letter");
        const auto by_bytes = refuse_park(kP3, {1, 10000}, limits);
        REQUIRE(by_bytes);
        CHECK(by_bytes->find("hold 10000 bytes, at the bound 10000 "
                             "(pipeline.max_parked_bytes_per_partition)") != std::string::npos);
    }

    TEST_CASE("no bound is set by zero limits") {
        CHECK_FALSE(refuse_park(kP3, {1000000, std::size_t{1} << 40}, ParkLimits{}));
    }
}
