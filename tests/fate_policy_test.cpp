// FatePolicy (pipeline/passes/fate_policy.hpp) without servers: what a
// failure costs the records it touches.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "pipeline/batch.hpp"
#include "pipeline/passes/fate_policy.hpp"

using namespace std::chrono_literals;

TEST_CASE(
    "records parked for a sequence gap the same number of times come back together: one delay, "
    "no jitter, doubling toward a quarter of the gap timeout") {
    exo::PipelineConfig pipeline;  // retry_backoff_initial 100 ms
    exo::PipelineStats stats({"payments"});
    auto log = spdlog::default_logger()->clone("fate-policy-test");
    exo::FatePolicy fate(pipeline, stats, *log);
    std::vector<exo::PendingRecord> taken(20);
    for (std::size_t n = 0; n < taken.size(); ++n) {
        taken[n].record.topic = exo::Topic{"payments"};
        taken[n].record.offset = exo::Offset{static_cast<std::int64_t>(n)};
    }
    exo::Batch batch(std::move(taken));
    // An entity's successors parked behind one missing predecessor, again and
    // again: jittered, they came back one by one, each ahead of its predecessor.
    // Capped at 1 s, one record waiting out a 60 s gap cost 60 transactions.
    for (auto expected :
         {50ms, 100ms, 200ms, 400ms, 800ms, 1600ms, 3200ms, 6400ms, 12800ms, 15000ms, 15000ms}) {
        CAPTURE(expected.count());
        for (auto& record : batch) {
            fate.park_for_gap(record, "acc-1", 60s, 1s);
            CHECK(record.fate == exo::Fate::park);
            CHECK(record.delay == expected);
        }
    }
}
