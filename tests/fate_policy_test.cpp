// FatePolicy (protocol/fate_policy.hpp) without servers: what a
// failure costs the records it touches.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/fate_policy.hpp"

using namespace std::chrono_literals;

TEST_CASE(
    "records parked for a sequence gap the same number of times come back together: one delay, "
    "no jitter, doubling to 1 s while young and backing off with the gap's age") {
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
    // Young (waited 1 s), they double to 1 s; old (waited 20 s), a quarter of
    // the age in powers of two: a 60 s gap no longer costs 60 transactions.
    for (auto [waited, expected] :
         std::vector<std::pair<std::chrono::milliseconds, std::chrono::milliseconds>>{
             {1s, 50ms},
             {1s, 100ms},
             {1s, 200ms},
             {1s, 400ms},
             {1s, 800ms},
             {1s, 1000ms},
             {1s, 1000ms},
             {20s, 4000ms},
             {40s, 8000ms}}) {
        CAPTURE(expected.count());
        for (auto& record : batch) {
            fate.park_for_gap(record, "acc-1", 60s, waited);
            CHECK(std::holds_alternative<exo::fate::Park>(record.fate()));
            CHECK(std::get<exo::fate::Park>(record.fate()).delay == expected);
        }
    }
}
