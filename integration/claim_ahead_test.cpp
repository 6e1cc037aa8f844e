// pipeline.claim_ahead (docs/design.md section 5): a worker claims its next
// batch on a second thread while the last batch's transaction runs, against
// real Redis, PostgreSQL and a mock Kafka cluster over TCP. A slow handler
// (test_handlers.hpp, `slow-*`) keeps one batch in its transaction long enough
// to see what the other thread did meanwhile.
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
            .workers = 1,
            .handler = "misbehaving_ledger",
            .slow_for = 3000ms};
}

// Which of the two claims a probe reads first. A claim's state only moves on
// (none, PROCESSING, COMPLETED), and the scheduler may pause the test between
// the two reads. next: slow-1 read after `next`'s claim was seen, so
// PROCESSING proves `next` was claimed before slow-1's batch settled. slow:
// slow-1 read before, so PROCESSING shows the claim ahead only while slow-1
// stays PROCESSING far longer than such a pause (its handler sleeps 3 s).
enum class ReadFirst { slow, next };

// Produces slow-1 to partition 0 and, once its claim is taken (its batch is
// in the handler), `next` to partition 1. Returns the state of slow-1's claim
// read next to the first sight of `next`'s claim, in the order given.
std::string slow_state_when_next_claimed(PipelineHarness& h, const std::string& next,
                                         ReadFirst first) {
    h.produce({payment("slow-1", "acc-1", 100, 1, 0)});
    REQUIRE(eventually([&] { return h.claim_state("slow-1") == "PROCESSING"; }, 60s));
    h.produce({payment(next, "acc-2", 7, 1, 1)});
    std::string slow_state;
    REQUIRE(eventually(
        [&] {
            if (first == ReadFirst::slow) slow_state = h.claim_state("slow-1");
            const bool claimed = h.claim_state(next) != "(none)";
            if (first == ReadFirst::next && claimed) slow_state = h.claim_state("slow-1");
            return claimed;
        },
        60s));
    return slow_state;
}

}  // namespace

TEST_CASE("with claim_ahead a worker claims its next batch while the last one's handler runs") {
    PipelineHarness h(one_worker("ahead"));
    h.mutable_config().pipeline.claim_ahead = true;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // slow-1's handler has ~3 s left when n-1 is claimed ahead: read first, it
    // is still PROCESSING.
    CHECK(slow_state_when_next_claimed(h, "n-1", ReadFirst::slow) == "PROCESSING");
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}, {"acc-2", 7}});
    CHECK(daemon.stats().applied == 2);
    CHECK(h.claim_state("slow-1") == "COMPLETED");
    CHECK(h.claim_state("n-1") == "COMPLETED");
}

TEST_CASE("without claim_ahead a worker claims its next batch only once the last one settled") {
    PipelineHarness h(one_worker("notahead"));
    REQUIRE_FALSE(h.config().pipeline.claim_ahead);  // the default
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // Read after n-1's claim was seen: PROCESSING would prove n-1 was claimed
    // while slow-1's batch had not settled (read before, a slow scheduler
    // between the two reads could show PROCESSING for a correct order).
    CHECK(slow_state_when_next_claimed(h, "n-1", ReadFirst::next) == "COMPLETED");
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}, {"acc-2", 7}});
    CHECK(daemon.stats().applied == 2);
}

TEST_CASE(
    "a key claimed ahead while its first copy is still in its transaction is applied once and "
    "its copy ends as a duplicate") {
    PipelineHarness h(one_worker("aheaddup"));
    h.mutable_config().pipeline.claim_ahead = true;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // The same event id in partition 1: the claiming thread claims it again
    // (the worker's own claim, re-entrant) while partition 0's copy sleeps in
    // its handler, and PostgreSQL's dedup row decides after that commit.
    h.produce({payment("slow-1", "acc-1", 100, 1, 0)});
    REQUIRE(eventually([&] { return h.claim_state("slow-1") == "PROCESSING"; }, 60s));
    h.produce({payment("slow-1", "acc-1", 100, 1, 1)});
    REQUIRE(h.wait_until_consumed(90s));
    REQUIRE(eventually([&] { return daemon.stats().finished() == 2; }, 30s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 1);
    CHECK(daemon.stats().applied == 1);
    CHECK(daemon.stats().duplicates() == 1);
    CHECK(h.claim_state("slow-1") == "COMPLETED");
}

// Serial (scripts/integration.sh): it stops and restarts Redis.
TEST_CASE(
    "with claim_ahead, a complete that failed while Redis was down does not leave Redis "
    "reported down once it answers again" *
    doctest::test_suite("serial")) {
    PipelineHarness h(one_worker("aheadredis"));
    h.mutable_config().pipeline.claim_ahead = true;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // slow-1's claim is taken; Redis goes while its handler sleeps, so the
    // applying thread's complete fails (its own Redis session counts it).
    h.produce({payment("slow-1", "acc-1", 100, 1, 0)});
    REQUIRE(eventually([&] { return h.claim_state("slow-1") == "PROCESSING"; }, 60s));
    exo::testing::services("redis-stop");
    REQUIRE(eventually([&] { return h.count("SELECT count(*) FROM ledger_entries") == 1; }, 30s));
    // The failed complete is counted: the worker reports Redis down.
    REQUIRE(eventually([&] { return !daemon.status().redis_up; }, 30s));
    exo::testing::services("redis-start");
    // Records claimed and completed with Redis back: both threads' sessions answer.
    h.produce({payment("n-1", "acc-2", 7, 1, 1), payment("n-2", "acc-2", 3, 2, 1)});
    REQUIRE(h.wait_until_consumed(90s));
    REQUIRE(eventually([&] { return h.claim_state("n-2") == "COMPLETED"; }, 30s));
    CHECK(eventually([&] { return daemon.status().redis_up; }, 10s));
    daemon.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}, {"acc-2", 10}});
}
