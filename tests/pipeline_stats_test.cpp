#include <doctest/doctest.h>

#include "metrics/pipeline_stats.hpp"

using exo::Outcome;
using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST_CASE("a finished record is counted once, in its topic and in the totals") {
    exo::PipelineStats stats({"payments", "orders"});
    stats.record_finished("payments", Outcome::applied, microseconds(10), std::nullopt);
    stats.record_finished("payments", Outcome::duplicate_redis, microseconds(10), std::nullopt);
    stats.record_finished("orders", Outcome::dead_lettered, microseconds(10), std::nullopt);
    stats.record_finished("orders", Outcome::duplicate_postgres, microseconds(10), std::nullopt);
    stats.record_finished("orders", Outcome::stale, microseconds(10), std::nullopt);
    stats.record_finished("orders", Outcome::duplicate_in_batch, microseconds(10), std::nullopt);
    CHECK(stats.applied == 1);
    CHECK(stats.duplicates_redis == 1);
    CHECK(stats.duplicates_postgres == 1);
    CHECK(stats.duplicates_in_batch == 1);
    CHECK(stats.duplicates() == 3);
    CHECK(stats.stale == 1);
    CHECK(stats.dead_lettered == 1);
    CHECK(stats.finished() == 6);
    const auto& payments = *stats.topics().at("payments");
    const auto& orders = *stats.topics().at("orders");
    CHECK(payments.count(Outcome::applied) == 1);
    CHECK(payments.count(Outcome::duplicate_redis) == 1);
    CHECK(payments.count(Outcome::dead_lettered) == 0);
    CHECK(orders.count(Outcome::dead_lettered) == 1);
    CHECK(orders.count(Outcome::applied) == 0);
    CHECK(orders.count(Outcome::duplicate_in_batch) == 1);
}

TEST_CASE("a record of a topic nobody bound is counted under the empty topic, not lost") {
    exo::PipelineStats stats({"payments"});
    stats.record_finished("elsewhere", Outcome::applied, microseconds(1), std::nullopt);
    CHECK(stats.topics().at("")->count(Outcome::applied) == 1);
    CHECK(stats.applied == 1);
}

TEST_CASE("end-to-end latency is observed only for records with a Kafka timestamp") {
    exo::PipelineStats stats({"t"});
    stats.record_finished("t", Outcome::applied, microseconds(5), std::nullopt);
    stats.record_finished("t", Outcome::applied, microseconds(5), milliseconds(30));
    auto snap = stats.topics().at("t")->record_latency.snapshot();
    CHECK(snap.count() == 1);
    CHECK(snap.sum_seconds == doctest::Approx(0.030));
}

TEST_CASE("histogram buckets are cumulative with +Inf equal to the count") {
    exo::BucketHistogram h;
    h.observe(microseconds(500));      // <= 1 ms
    h.observe(milliseconds(1));        // exactly on the 1 ms bound: le="0.001"
    h.observe(milliseconds(7));        // <= 10 ms
    h.observe(std::chrono::hours(1));  // beyond the last bound: +Inf only
    auto s = h.snapshot();
    CHECK(s.cumulative[0] == 2);                                         // le 0.001
    CHECK(s.cumulative[3] == 3);                                         // le 0.01
    CHECK(s.cumulative[exo::BucketHistogram::kBounds.size() - 1] == 3);  // le 60
    CHECK(s.count() == 4);
    CHECK(s.sum_seconds == doctest::Approx(3600.0085));
    for (std::size_t i = 1; i < s.cumulative.size(); ++i)
        CHECK(s.cumulative[i] >= s.cumulative[i - 1]);
}

TEST_CASE("a negative duration (a producer clock ahead of ours) counts as zero") {
    exo::BucketHistogram h;
    h.observe(microseconds(-2000));
    auto s = h.snapshot();
    CHECK(s.cumulative[0] == 1);
    CHECK(s.sum_seconds == 0);
}
