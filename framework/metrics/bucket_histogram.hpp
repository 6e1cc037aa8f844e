#pragma once
// A histogram with fixed upper bounds, as Prometheus exposes them (cumulative
// buckets, a sum and a count): lock-free to observe from every worker,
// constant memory. Durations are kept in microseconds and exported in seconds.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace exo {

class BucketHistogram {
public:
    // Upper bounds in seconds (the +Inf bucket is implicit): 1 ms to 1 min,
    // about 2.5x apart, which covers a handler's statements as well as a
    // record's end-to-end latency through a retry or a rebalance.
    static constexpr std::array<double, 14> kBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                    0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 60.0};

    // `times` observations of `d` each (a batch's share per record).
    void observe(std::chrono::microseconds d, std::uint64_t times = 1) {
        const auto micros = d.count() < 0 ? 0 : d.count();
        std::size_t i = 0;
        while (i < kBounds.size() && static_cast<double>(micros) > kBounds[i] * 1e6) ++i;
        buckets_[i].fetch_add(times, std::memory_order_relaxed);
        sum_micros_.fetch_add(static_cast<std::uint64_t>(micros) * times,
                              std::memory_order_relaxed);
    }

    struct Snapshot {
        std::array<std::uint64_t, kBounds.size() + 1> cumulative{};  // last: +Inf == count
        double sum_seconds = 0;
        std::uint64_t count() const { return cumulative.back(); }
    };
    // Each bucket is read once; a concurrent observe may be half in (counted in
    // a bucket, not yet in the sum), which a scrape tolerates.
    Snapshot snapshot() const {
        Snapshot s;
        std::uint64_t running = 0;
        for (std::size_t i = 0; i < buckets_.size(); ++i) {
            running += buckets_[i].load(std::memory_order_relaxed);
            s.cumulative[i] = running;
        }
        s.sum_seconds = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
        return s;
    }

private:
    std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
    std::atomic<std::uint64_t> sum_micros_{0};
};

}  // namespace exo
