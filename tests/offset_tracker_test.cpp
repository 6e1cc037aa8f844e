// Which offsets may be committed: core/offset_tracker.hpp. No servers.
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "core/offset_tracker.hpp"

using namespace exo;

namespace {

TopicPartition tp(const char* topic, int partition) {
    return {Topic{topic}, Partition{partition}};
}

// The committable next offset of `partition`, if it moved.
std::optional<std::int64_t> next_of(const OffsetTracker& t, const TopicPartition& partition) {
    std::optional<std::int64_t> out;
    for (const auto& p : t.committable()) {
        if (p.partition == partition) {
            REQUIRE_FALSE(out.has_value());  // one commit point per partition
            out = p.next.value;
        }
    }
    return out;
}

std::optional<std::int64_t> next_of(const PartitionOffsets& p) {
    auto next = p.committable();
    return next ? std::optional<std::int64_t>(next->value) : std::nullopt;
}

}  // namespace

TEST_SUITE("PartitionOffsets") {
    TEST_CASE("nothing is committable before anything was tracked") {
        PartitionOffsets p;
        CHECK_FALSE(p.committable().has_value());
        p.finish(Offset{5});  // unknown: ignored
        CHECK_FALSE(p.committable().has_value());
    }

    TEST_CASE("a tracked but unfinished record holds the commit at its own offset") {
        PartitionOffsets p;
        p.track(Offset{10});
        CHECK(next_of(p) == 10);
        CHECK(p.unfinished() == 1);
    }

    TEST_CASE("finishing every record commits one past the highest") {
        PartitionOffsets p;
        for (int o = 0; o < 3; ++o) p.track(Offset{o});
        for (int o = 0; o < 3; ++o) p.finish(Offset{o});
        CHECK(next_of(p) == 3);
        CHECK(p.unfinished() == 0);
    }

    TEST_CASE("out-of-order completion commits only the contiguous finished prefix") {
        PartitionOffsets p;
        for (int o = 0; o < 5; ++o) p.track(Offset{o});
        p.finish(Offset{1});
        p.finish(Offset{3});
        p.finish(Offset{4});
        CHECK(next_of(p) == 0);  // 0 is unfinished: nothing below it may pass
        p.finish(Offset{0});
        CHECK(next_of(p) == 2);  // 2 is now the lowest unfinished
        p.finish(Offset{2});
        CHECK(next_of(p) == 5);
    }

    TEST_CASE("gaps between offsets (compaction) do not block the commit") {
        PartitionOffsets p;
        p.track(Offset{100});
        p.track(Offset{107});
        p.track(Offset{230});
        p.finish(Offset{100});
        CHECK(next_of(p) == 107);
        p.finish(Offset{230});
        CHECK(next_of(p) == 107);
        p.finish(Offset{107});
        CHECK(next_of(p) == 231);
    }

    TEST_CASE("committable returns nothing until the offset moves past the committed one") {
        PartitionOffsets p;
        p.track(Offset{0});
        p.track(Offset{1});
        p.finish(Offset{0});
        REQUIRE(next_of(p) == 1);
        p.mark_committed(Offset{1});
        CHECK_FALSE(p.committable().has_value());
        p.track(Offset{2});  // tracked but unfinished: the commit point stays 1
        CHECK_FALSE(p.committable().has_value());
        p.finish(Offset{1});
        CHECK(next_of(p) == 2);
    }

    TEST_CASE("marking an older commit does not move the committed point back") {
        PartitionOffsets p;
        for (int o = 0; o < 4; ++o) p.track(Offset{o});
        for (int o = 0; o < 4; ++o) p.finish(Offset{o});
        p.mark_committed(Offset{4});
        p.mark_committed(Offset{2});
        CHECK_FALSE(p.committable().has_value());
    }

    TEST_CASE("a re-fetched offset below the highest tracked is held until it finishes again") {
        PartitionOffsets p;
        p.track(Offset{50});
        p.track(Offset{51});
        p.track(Offset{45});  // re-fetched after a revoke and re-assign within one poll
        p.finish(Offset{50});
        p.finish(Offset{51});
        CHECK(next_of(p) == 45);  // never past the re-fetched record in flight
        p.finish(Offset{45});
        CHECK(next_of(p) == 52);
    }

    TEST_CASE("a re-fetched offset below the last commit is ignored") {
        PartitionOffsets p;
        p.track(Offset{5});
        p.finish(Offset{5});
        p.mark_committed(Offset{6});
        p.track(Offset{5});
        CHECK(p.unfinished() == 0);
    }

    TEST_CASE("finishing an offset that was never tracked changes nothing") {
        PartitionOffsets p;
        p.track(Offset{3});
        p.finish(Offset{2});
        p.finish(Offset{4});
        CHECK(p.unfinished() == 1);
        CHECK(next_of(p) == 3);
    }

    TEST_CASE("finishing the same offset twice is harmless") {
        PartitionOffsets p;
        p.track(Offset{0});
        p.track(Offset{1});
        p.finish(Offset{0});
        p.finish(Offset{0});
        CHECK(p.unfinished() == 1);
        CHECK(next_of(p) == 1);
    }
}

TEST_SUITE("OffsetTracker") {
    TEST_CASE("an out-of-order finish commits only up to the lowest unfinished offset") {
        OffsetTracker t;
        auto a = tp("orders", 0);
        for (int o = 10; o < 14; ++o) t.track(a, Offset{o});
        t.finish(a, Offset{12});
        t.finish(a, Offset{11});
        CHECK(next_of(t, a) == 10);
        t.finish(a, Offset{10});
        CHECK(next_of(t, a) == 13);
        CHECK(t.unfinished(a) == 1);
    }

    TEST_CASE("committable is empty after mark_committed until the partition moves again") {
        OffsetTracker t;
        auto a = tp("orders", 0);
        t.track(a, Offset{0});
        t.finish(a, Offset{0});
        auto points = t.committable();
        REQUIRE(points.size() == 1);
        CHECK(points[0].next == Offset{1});
        t.mark_committed(points);
        CHECK(t.committable().empty());
        t.track(a, Offset{1});
        CHECK(t.committable().empty());
        t.finish(a, Offset{1});
        CHECK(next_of(t, a) == 2);
    }

    TEST_CASE("a finish for a forgotten (revoked) partition is ignored") {
        OffsetTracker t;
        auto a = tp("orders", 0);
        t.track(a, Offset{0});
        t.forget(a);
        t.finish(a, Offset{0});
        CHECK(t.committable().empty());
        CHECK(t.unfinished(a) == 0);
    }

    TEST_CASE("a partition re-assigned after forget starts afresh") {
        OffsetTracker t;
        auto a = tp("orders", 0);
        t.track(a, Offset{50});
        t.finish(a, Offset{50});
        t.mark_committed(t.committable());
        t.forget(a);
        t.track(a, Offset{20});  // the new owner may resume below what was tracked
        CHECK(t.unfinished(a) == 1);
        CHECK(next_of(t, a) == 20);
    }

    TEST_CASE("mark_committed for an unknown partition is ignored") {
        OffsetTracker t;
        auto a = tp("orders", 0);
        t.mark_committed({{a, Offset{5}}});
        CHECK(t.committable().empty());
        t.track(a, Offset{0});
        CHECK(next_of(t, a) == 0);
    }

    TEST_CASE("the only filter limits the commit points to the listed partitions") {
        OffsetTracker t;
        auto a = tp("orders", 0), b = tp("orders", 1), c = tp("other", 0);
        for (const auto& p : {a, b, c}) {
            t.track(p, Offset{0});
            t.finish(p, Offset{0});
        }
        auto unknown = tp("never", 9);
        std::vector<TopicPartition> only{b, unknown};
        auto points = t.committable(&only);
        REQUIRE(points.size() == 1);
        CHECK(points[0].partition == b);
        CHECK(points[0].next == Offset{1});
        CHECK(t.committable().size() == 3);

        std::vector<TopicPartition> none;
        CHECK(t.committable(&none).empty());
    }

    TEST_CASE("partitions are tracked independently") {
        OffsetTracker t;
        auto a = tp("orders", 0), b = tp("orders", 1), c = tp("refunds", 0);
        t.track(a, Offset{5});
        t.track(b, Offset{5});
        t.track(c, Offset{5});
        t.track(b, Offset{6});
        t.finish(b, Offset{5});
        t.finish(b, Offset{6});
        t.finish(c, Offset{5});
        CHECK(next_of(t, a) == 5);
        CHECK(next_of(t, b) == 7);
        CHECK(next_of(t, c) == 6);
        CHECK(t.unfinished(a) == 1);
        CHECK(t.unfinished(b) == 0);

        t.mark_committed({{b, Offset{7}}});
        CHECK_FALSE(next_of(t, b).has_value());
        CHECK(next_of(t, a) == 5);  // marking b committed does not touch a or c
        CHECK(next_of(t, c) == 6);
    }

    TEST_CASE("the same partition number on different topics is a different partition") {
        OffsetTracker t;
        auto a = tp("orders", 0), b = tp("refunds", 0);
        t.track(a, Offset{0});
        t.track(b, Offset{0});
        t.finish(a, Offset{0});
        CHECK(next_of(t, a) == 1);
        CHECK(next_of(t, b) == 0);
    }
}

TEST_SUITE("PartitionOffsets past transaction markers") {
    TEST_CASE("a position past the last finished record is committable: the markers behind it") {
        PartitionOffsets p;
        for (std::int64_t o = 0; o <= 9; ++o) p.track(Offset{o});
        for (std::int64_t o = 0; o <= 9; ++o) p.finish(Offset{o});
        p.mark_committed(Offset{10});
        // 10 is the trailing commit marker: the consumer's position is 11.
        auto past = p.committable_at(Offset{11});
        REQUIRE(past.has_value());
        CHECK(past->value == 11);
        p.mark_committed(*past);
        CHECK_FALSE(p.committable_at(Offset{11}).has_value());  // committed already
    }

    TEST_CASE("a position is never committable while a tracked record is unfinished") {
        PartitionOffsets p;
        p.track(Offset{0});
        p.track(Offset{1});
        p.finish(Offset{1});
        CHECK_FALSE(p.committable_at(Offset{3}).has_value());
    }

    TEST_CASE("a position at or below the next offset after the records adds nothing") {
        PartitionOffsets p;
        p.track(Offset{4});
        p.finish(Offset{4});
        CHECK_FALSE(p.committable_at(Offset{5}).has_value());
        CHECK_FALSE(p.committable_at(Offset{2}).has_value());  // rewound: behind
    }

    TEST_CASE("nothing is committable at a position before any record was tracked") {
        PartitionOffsets p;
        CHECK_FALSE(p.committable_at(Offset{7}).has_value());
        OffsetTracker t;
        CHECK_FALSE(t.committable_at(tp("orders", 0), Offset{7}).has_value());
    }
}
