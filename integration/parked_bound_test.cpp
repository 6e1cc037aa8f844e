// Records parked on a strict-sequence gap are bounded per partition
// (pipeline.max_parked_per_partition) and back off toward gap_timeout_ms
// (scheduling/gap_parking.hpp): a stream of first records of fresh entities
// that all start at sequence 2 cannot grow memory or PostgreSQL load without
// bound. Real Redis, PostgreSQL and the mock cluster; counts, not timings.
#include <doctest/doctest.h>

#include <thread>

#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::eventually;
using exo::testing::header;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;

namespace {

std::uint64_t parks(const RunningDaemon& d, const std::string& topic) {
    const auto& topics = d.stats().topics();
    auto it = topics.find(topic);
    return it == topics.end() ? 0 : it->second->parked.load();
}

std::size_t parked_now(const RunningDaemon& d) {
    std::size_t n = 0;
    for (const auto& p : d.status().partitions) n += p.parked;
    return n;
}

std::int64_t dedup_rows(const PipelineHarness& h, const std::string& event) {
    return h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = '" + event + "'");
}

}  // namespace

TEST_CASE(
    "past max_parked_per_partition new strict-sequence gaps are dead-lettered at once without a "
    "dedup row, while the parked ones back off toward gap_timeout and apply once their gap "
    "fills") {
    PipelineHarness h(
        {.name = "parked_bound", .partitions = 1, .gap_timeout = 60s, .concurrency = 1});
    h.mutable_config().pipeline.max_parked_per_partition = 3;
    // acc-a and acc-b wait for their first records; then a stream of fresh
    // entities whose first record is sequence 2: the first takes the last
    // parked place, the four after it find the partition at its bound.
    std::vector<exo::PaymentMessage> early = {payment("a-2", "acc-a", 20, 2),
                                              payment("b-2", "acc-b", 200, 2)};
    for (int n = 1; n <= 5; ++n)
        early.push_back(
            payment("fresh-" + std::to_string(n), "fresh-" + std::to_string(n), 1000, 2));
    h.produce(early);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());

    auto letters = read_topic(h.bootstrap(), h.topic() + ".dlq", 4);
    REQUIRE(letters.size() == 4);
    for (std::size_t n = 0; n < letters.size(); ++n) {
        CAPTURE(n);
        CHECK(header(letters[n], "exo-idempotency-key") == "fresh-" + std::to_string(n + 2));
        CHECK(header(letters[n], "exo-error")
                  .find("are at the bound 3 (pipeline.max_parked_per_partition)") !=
              std::string::npos);
        // No dedup row: `exo dlq replay` may apply it later, once.
        CHECK(dedup_rows(h, "fresh-" + std::to_string(n + 2)) == 0);
    }
    // The status is published every 250 ms.
    CHECK(eventually([&] { return parked_now(d) == 3; }, 10s));

    // Once their gaps are at least 6 s old, over the next 16 s each of the
    // three parks at most 8 times (1 s apart until 8 s of age, 2 s until 16 s,
    // then 4 s), not 16 (once a second, the ladder capped at 1 s): a slow
    // machine only parks them less.
    std::this_thread::sleep_for(6s);
    const auto before = parks(d, h.topic());
    std::this_thread::sleep_for(16s);
    const auto during = parks(d, h.topic()) - before;
    MESSAGE("parks in 16 s: " << during);
    CHECK(during <= 3 * 8);
    CHECK(parked_now(d) == 3);
    CHECK(d.stats().dead_lettered == 4);

    // Their gaps fill: acc-a and acc-b apply in sequence at their next try;
    // fresh-1 keeps waiting.
    h.produce({payment("a-1", "acc-a", 10, 1), payment("b-1", "acc-b", 100, 1)});
    REQUIRE(eventually(
        [&] {
            const auto b = h.balances();
            return b.contains("acc-a") && b.at("acc-a") == 30 && b.contains("acc-b") &&
                   b.at("acc-b") == 300;
        },
        90s));
    CHECK(eventually([&] { return parked_now(d) == 1; }, 30s));  // fresh-1
    // With places free again, a new gap parks instead of being dead-lettered.
    h.produce({payment("fresh-6", "fresh-6", 1000, 2)});
    CHECK(eventually([&] { return parked_now(d) == 2; }, 30s));
    CHECK(d.stats().dead_lettered == 4);
    const auto balances = h.balances();
    for (int n = 1; n <= 6; ++n) CHECK_FALSE(balances.contains("fresh-" + std::to_string(n)));
    d.stop();
}
