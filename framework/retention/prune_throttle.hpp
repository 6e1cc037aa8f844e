#pragma once
// The pace of retention pruning (retention.max_rows_per_second): a chunk of n
// rows "costs" n / max seconds from its start, and the next chunk starts when
// that time has passed. A chunk slower than its share starts the next at once,
// and time not used is not saved up, so a backlog is deleted at the cap and
// never in a burst above it. Pure: the clock is passed in, so tests are
// deterministic.
#include <chrono>
#include <cstddef>

namespace exo {

class PruneThrottle {
public:
    using Clock = std::chrono::steady_clock;

    // 0: no cap (every chunk may start at once).
    explicit PruneThrottle(int max_rows_per_second) : max_(max_rows_per_second) {}

    // A chunk that started at `started` deleted `rows`: when the next one may start.
    Clock::time_point next_start(Clock::time_point started, std::size_t rows) const {
        if (max_ <= 0 || rows == 0) return started;
        return started + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(static_cast<double>(rows) / max_));
    }

private:
    int max_;
};

}  // namespace exo
