// Which fetched records are re-reads the daemon asked for: scheduling/read_again.hpp.
#include <doctest/doctest.h>

#include "scheduling/read_again.hpp"

using namespace exo;
using namespace std::chrono_literals;
using Fetched = ReadAgain::Fetched;

namespace {

const TopicPartition kP0{Topic{"orders"}, Partition{0}};
const TopicPartition kP1{Topic{"orders"}, Partition{1}};
const auto kNow = ReadAgain::Clock::now();

// Fetches [first, last] of `tp` fresh.
void fetch_fresh(ReadAgain& r, const TopicPartition& tp, std::int64_t first, std::int64_t last) {
    for (auto o = first; o <= last; ++o)
        REQUIRE(r.fetched(tp, Offset{o}, kNow).kind == Fetched::fresh);
}

}  // namespace

TEST_SUITE("ReadAgain") {
    TEST_CASE("records are fresh until a window is opened") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        CHECK_FALSE(r.reading_again(kP0));
    }

    TEST_CASE("a window makes the records read before it re-reads, up to where reading had got") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{4}, kNow));
        for (std::int64_t o = 4; o <= 9; ++o)
            CHECK(r.fetched(kP0, Offset{o}, kNow).kind == Fetched::reread);
        CHECK_FALSE(r.reading_again(kP0));  // closed at its last record
        CHECK(r.fetched(kP0, Offset{10}, kNow).kind == Fetched::fresh);
    }

    TEST_CASE("another partition's records stay fresh while one reads again") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        fetch_fresh(r, kP1, 0, 9);
        REQUIRE(r.open(kP0, Offset{0}, kNow));
        CHECK(r.fetched(kP1, Offset{10}, kNow).kind == Fetched::fresh);
        CHECK(r.fetched(kP0, Offset{0}, kNow).kind == Fetched::reread);
    }

    TEST_CASE("an older record with no window open is fresh: only asked-for re-reads are dropped") {
        // A re-assignment's first fetch in one poll with older records: both
        // are handed over, or the older ones would be lost.
        ReadAgain r;
        fetch_fresh(r, kP0, 10, 12);
        CHECK(r.fetched(kP0, Offset{3}, kNow).kind == Fetched::fresh);
    }

    TEST_CASE("a window closed at its last offset says so, with its end") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{7}, kNow));
        auto seven = r.fetched(kP0, Offset{7}, kNow);
        CHECK_FALSE(seven.closed_window_end);
        auto nine = r.fetched(kP0, Offset{9}, kNow);  // 8 is gone from Kafka
        REQUIRE(nine.closed_window_end);
        CHECK(nine.closed_window_end->value == 10);
        CHECK(nine.closed_window == seven.window);
    }

    TEST_CASE("a fresh record after a re-read closes the window: the fetch passed its gone end") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{5}, kNow));
        REQUIRE(r.fetched(kP0, Offset{5}, kNow).kind == Fetched::reread);
        auto past = r.fetched(kP0, Offset{10}, kNow);  // 6 to 9 gone
        CHECK(past.kind == Fetched::fresh);
        REQUIRE(past.closed_window_end);
        CHECK(past.closed_window_end->value == 10);
        CHECK_FALSE(r.reading_again(kP0));
    }

    TEST_CASE("each window has its own id") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{9}, kNow));
        const auto first = r.fetched(kP0, Offset{9}, kNow).window;
        REQUIRE(r.open(kP0, Offset{9}, kNow));
        CHECK(r.fetched(kP0, Offset{9}, kNow).window != first);
    }

    TEST_CASE("a record past the window fetched before the rewind does not close it") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{5}, kNow));
        CHECK(r.fetched(kP0, Offset{10}, kNow).kind ==
              Fetched::fresh);  // prefetched, returned late
        CHECK(r.fetched(kP0, Offset{5}, kNow).kind == Fetched::reread);
        CHECK(r.reading_again(kP0));
    }

    TEST_CASE("a second window waits for the first, unless the first went stale") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{2}, kNow));
        CHECK_FALSE(r.open(kP0, Offset{1}, kNow + 1s));
        CHECK(r.open(kP0, Offset{1}, kNow + ReadAgain::kStale + 1s));
    }

    TEST_CASE("nothing to read again before anything at or past the offset was read") {
        ReadAgain r;
        CHECK_FALSE(r.open(kP0, Offset{0}, kNow));
        fetch_fresh(r, kP0, 0, 4);
        CHECK_FALSE(r.open(kP0, Offset{5}, kNow));
    }

    TEST_CASE("forgetting a revoked partition closes its window") {
        ReadAgain r;
        fetch_fresh(r, kP0, 0, 9);
        REQUIRE(r.open(kP0, Offset{0}, kNow));
        r.forget(kP0);
        CHECK(r.fetched(kP0, Offset{0}, kNow).kind == Fetched::fresh);
    }
}
