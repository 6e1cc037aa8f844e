#pragma once
// Record latency (poll to durable outcome) in log-spaced buckets of atomic
// counters: lock-free to record from every worker, constant memory whatever
// the number of records, percentiles good to about 10%.
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace exo {

class LatencyHistogram {
public:
    static constexpr int kBuckets = 128;
    static constexpr double kFirstMicros = 20.0;  // upper edge of bucket 0
    static constexpr double kGrowth = 1.15;       // each bucket 15% wider

    void record(std::chrono::microseconds latency) {
        buckets_[bucket_of(static_cast<double>(latency.count()))].fetch_add(
            1, std::memory_order_relaxed);
    }

    // The latency below which `quantile` (0..1) of the records fall (bucket
    // upper edge); zero when nothing was recorded.
    std::chrono::microseconds percentile(double quantile) const {
        std::uint64_t total = 0;
        for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
        if (total == 0) return std::chrono::microseconds(0);
        auto target = static_cast<std::uint64_t>(std::ceil(quantile * static_cast<double>(total)));
        std::uint64_t seen = 0;
        for (int i = 0; i < kBuckets; ++i) {
            seen += buckets_[i].load(std::memory_order_relaxed);
            if (seen >= target && seen > 0)
                return std::chrono::microseconds(static_cast<long long>(upper_edge(i)));
        }
        return std::chrono::microseconds(static_cast<long long>(upper_edge(kBuckets - 1)));
    }

private:
    static double upper_edge(int i) { return kFirstMicros * std::pow(kGrowth, i); }
    static int bucket_of(double micros) {
        if (micros <= kFirstMicros) return 0;
        int i = static_cast<int>(std::ceil(std::log(micros / kFirstMicros) / std::log(kGrowth)));
        return i >= kBuckets ? kBuckets - 1 : i;
    }

    std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
};

}  // namespace exo
