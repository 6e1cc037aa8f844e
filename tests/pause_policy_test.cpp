#include <doctest/doctest.h>

#include <map>

#include "scheduling/pause_policy.hpp"

using exo::PartitionLoad;
using exo::PauseLimits;
using exo::PausePolicy;
using exo::TopicPartition;

namespace {

const TopicPartition p0{exo::Topic{"t"}, exo::Partition{0}};
const TopicPartition p1{exo::Topic{"t"}, exo::Partition{1}};

// 100 records or 1,000 bytes a partition, 1,000 spilled, 150 records or
// 10,000 bytes in the process.
PauseLimits limits() {
    return {
        .records = 100, .bytes = 1000, .spilled = 1000, .total_records = 150, .total_bytes = 10000};
}

std::map<TopicPartition, PartitionLoad> loads(PartitionLoad a, PartitionLoad b = {}) {
    return {{p0, a}, {p1, b}};
}

}  // namespace

TEST_CASE(
    "a partition is paused at either of its bounds and resumed only once every one is at half") {
    struct Row {
        const char* what;
        PartitionLoad pause_at;
        PartitionLoad still_paused;
        PartitionLoad resumed;
    };
    const Row rows[] = {
        {"records", {100, 0, 0}, {51, 0, 0}, {50, 0, 0}},
        {"bytes", {0, 1000, 0}, {0, 501, 0}, {0, 500, 0}},
        {"held keys' spilled offsets", {0, 0, 1000}, {0, 0, 501}, {0, 0, 500}},
        {"records, bytes still over half", {100, 0, 0}, {10, 600, 0}, {10, 400, 0}},
    };
    for (const auto& row : rows) {
        CAPTURE(row.what);
        PausePolicy policy(limits());
        auto changes = policy.update(0, 0, loads({99, 999, 999}));
        CHECK(changes.pause.empty());  // just under every bound
        changes = policy.update(0, 0, loads(row.pause_at));
        CHECK(changes.pause == std::vector{p0});
        CHECK(changes.resume.empty());
        CHECK(policy.paused(p0));
        CHECK_FALSE(policy.paused(p1));
        changes = policy.update(0, 0, loads(row.pause_at));
        CHECK(changes.pause.empty());  // paused once, not on every poll
        changes = policy.update(0, 0, loads(row.still_paused));
        CHECK(changes.resume.empty());
        CHECK(policy.paused(p0));
        changes = policy.update(0, 0, loads(row.resumed));
        CHECK(changes.resume == std::vector{p0});
        CHECK_FALSE(policy.paused(p0));
    }
}

TEST_CASE("the process's bound pauses every partition and resumes them once it is at half") {
    PausePolicy policy(limits());
    auto changes = policy.update(150, 0, loads({1, 1, 0}, {1, 1, 0}));
    CHECK(changes.pause == std::vector{p0, p1});
    changes = policy.update(76, 0, loads({1, 1, 0}, {1, 1, 0}));
    CHECK(changes.resume.empty());
    changes = policy.update(75, 0, loads({1, 1, 0}, {1, 1, 0}));
    CHECK(changes.resume == std::vector{p0, p1});
    changes = policy.update(0, 10000, {{p0, {1, 1, 0}}});
    CHECK(changes.pause == std::vector{p0});  // its bytes too; p1 unmeasured keeps its state
    CHECK_FALSE(policy.paused(p1));
}

TEST_CASE("a partition forgotten at a revoke starts unpaused when it comes back") {
    PausePolicy policy(limits());
    policy.update(0, 0, loads({100, 0, 0}));
    REQUIRE(policy.paused(p0));
    policy.forget(p0);
    CHECK_FALSE(policy.paused(p0));
    // Over its bound again on its return: paused again, once.
    CHECK(policy.update(0, 0, loads({100, 0, 0})).pause == std::vector{p0});
}

TEST_CASE("a partition's limits come from the pipeline section") {
    exo::PipelineConfig pipeline;
    pipeline.max_queued_per_partition = 7;
    pipeline.max_queued_bytes_per_partition = 700;
    pipeline.max_in_flight = 70;
    pipeline.max_in_flight_bytes = 7000;
    const auto l = PauseLimits::of(pipeline);
    CHECK(l.records == 7);
    CHECK(l.bytes == 700);
    CHECK(l.spilled == 7 * PauseLimits::kSpilledPerQueued);
    CHECK(l.total_records == 70);
    CHECK(l.total_bytes == 7000);
}

TEST_CASE(
    "the pause policy is quiet, and the poll loop skips measuring partitions, only when no "
    "partition could be paused or resumed") {
    PausePolicy policy(limits());  // per partition 100 records / 1,000 bytes; 150 / 10,000 in all
    CHECK(policy.quiet(50, 500, 0));
    CHECK_FALSE(policy.quiet(51, 0, 0));   // one partition may hold all 51: near its bound
    CHECK_FALSE(policy.quiet(0, 501, 0));  // the same for bytes
    CHECK_FALSE(policy.quiet(0, 0, 1));    // a held key spilled: its offsets may be read again
    PausePolicy tight({.records = 1000,
                       .bytes = 100000,
                       .spilled = 100000,
                       .total_records = 40,
                       .total_bytes = 100000});
    CHECK_FALSE(tight.quiet(40, 0, 0));  // at the process's own bound
    CHECK(tight.quiet(39, 0, 0));
    policy.update(0, 0, loads({100, 0, 0}));  // p0 paused
    CHECK_FALSE(policy.quiet(0, 0, 0));       // its resume is due: only update() sees it
    policy.update(0, 0, loads({0, 0, 0}));
    CHECK(policy.quiet(0, 0, 0));

    // Whenever it says quiet, update() changes nothing for any split of the
    // totals between two partitions (spilled offsets are never counted then).
    for (std::size_t total : {0, 25, 50, 51, 149, 150}) {
        for (std::size_t bytes : {0, 500, 501, 9999, 10000}) {
            for (std::size_t first = 0; first <= total; first += 5) {
                PausePolicy fresh(limits());
                if (!fresh.quiet(total, bytes, 0)) continue;
                const auto changes = fresh.update(
                    total, bytes, loads({first, bytes / 2, 0}, {total - first, bytes - bytes / 2}));
                CAPTURE(total);
                CAPTURE(bytes);
                CAPTURE(first);
                CHECK(changes.pause.empty());
                CHECK(changes.resume.empty());
            }
        }
    }
}
