#include <doctest/doctest.h>

#include "metrics/latency_histogram.hpp"

using std::chrono::microseconds;

TEST_CASE("an empty latency histogram reports zero") {
    exo::LatencyHistogram h;
    CHECK(h.percentile(0.5) == microseconds(0));
}

TEST_CASE("latency percentiles are within one bucket (15%) of the true value") {
    exo::LatencyHistogram h;
    for (int i = 1; i <= 1000; ++i) h.record(microseconds(i * 100));  // 0.1 .. 100 ms
    auto p50 = static_cast<double>(h.percentile(0.50).count());
    auto p99 = static_cast<double>(h.percentile(0.99).count());
    CHECK(p50 >= 50000);
    CHECK(p50 <= 50000 * 1.15);
    CHECK(p99 >= 99000);
    CHECK(p99 <= 99000 * 1.15);
}

TEST_CASE("latencies beyond the last bucket are counted, not lost") {
    exo::LatencyHistogram h;
    h.record(std::chrono::hours(10));
    CHECK(h.percentile(1.0) > microseconds(0));
}
