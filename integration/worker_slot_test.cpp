// One worker slot runs a batch whole, keys and claims through complete and
// release (docs/design.md#per-record), before it claims the next, against real
// Redis, PostgreSQL and a mock Kafka cluster over TCP. A slow handler
// (test_handlers.hpp, `slow-*`) keeps one batch in its transaction long enough
// to see what happens meanwhile.
#include <doctest/doctest.h>

#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::eventually;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

namespace {

// One worker, two partitions; the slow record's handler sleeps 3 s.
exo::testing::HarnessOptions one_worker(const char* name) {
    return {.name = name,
            .partitions = 2,
            .handler = "misbehaving_ledger",
            .slow_for = 3000ms,
            .concurrency = 1};
}

// Produces slow-1 to partition 0 and, once its claim is taken (its batch is
// in the handler), `next` to partition 1. Returns the state of slow-1's claim
// read right after the first sight of `next`'s claim. A claim's state only
// moves on (none, PROCESSING, COMPLETED), so PROCESSING would prove `next` was
// claimed before slow-1's batch settled (read before, a slow scheduler between
// the two reads could show PROCESSING for a correct order).
std::string slow_state_when_next_claimed(PipelineHarness& h, const std::string& next) {
    h.produce({payment("slow-1", "acc-1", 100, 1, 0)});
    REQUIRE(eventually([&] { return h.claim_state("slow-1") == "PROCESSING"; }, 60s));
    h.produce({payment(next, "acc-2", 7, 1, 1)});
    std::string slow_state;
    REQUIRE(eventually(
        [&] {
            const bool claimed = h.claim_state(next) != "(none)";
            if (claimed) slow_state = h.claim_state("slow-1");
            return claimed;
        },
        60s));
    return slow_state;
}

}  // namespace

TEST_CASE("a worker with one slot claims its next batch only once the last one settled") {
    PipelineHarness h(one_worker("oneslot"));
    REQUIRE(h.config().pipeline.concurrency == 1);  // the default
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    CHECK(slow_state_when_next_claimed(h, "n-1") == "COMPLETED");
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}, {"acc-2", 7}});
    CHECK(daemon.stats().applied == 2);
}

// Serial (scripts/integration.sh): it stops and restarts Redis.
TEST_CASE(
    "a complete that failed while Redis was down does not leave Redis reported down once it "
    "answers again" *
    doctest::test_suite("serial")) {
    PipelineHarness h(one_worker("redisback"));
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // slow-1's claim is taken; Redis goes while its handler sleeps, so the
    // batch's complete fails (its slot's Redis session counts it).
    h.produce({payment("slow-1", "acc-1", 100, 1, 0)});
    REQUIRE(eventually([&] { return h.claim_state("slow-1") == "PROCESSING"; }, 60s));
    exo::testing::services("redis-stop");
    REQUIRE(eventually([&] { return h.count("SELECT count(*) FROM ledger_entries") == 1; }, 30s));
    // The failed complete is counted: the worker reports Redis down.
    REQUIRE(eventually([&] { return !daemon.status().redis_up; }, 30s));
    exo::testing::services("redis-start");
    // Records claimed and completed with Redis back: the session answers again.
    h.produce({payment("n-1", "acc-2", 7, 1, 1), payment("n-2", "acc-2", 3, 2, 1)});
    REQUIRE(h.wait_until_consumed(90s));
    REQUIRE(eventually([&] { return h.claim_state("n-2") == "COMPLETED"; }, 30s));
    CHECK(eventually([&] { return daemon.status().redis_up; }, 10s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}, {"acc-2", 10}});
}
