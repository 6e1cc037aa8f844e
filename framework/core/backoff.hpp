#pragma once
// Exponential backoff with jitter for NACKs and retries. Pure: the random
// fraction is passed in, so tests are deterministic.
#include <algorithm>
#include <chrono>

namespace exo {

struct Backoff {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{10000};

    // Delay before try number `attempt` (1 = first retry): initial * 2^(attempt-1),
    // capped at max, then scaled into [50%, 100%] by `jitter` in [0, 1) ("equal
    // jitter": spreads retries of many workers without ever retrying at once).
    std::chrono::milliseconds delay(int attempt, double jitter) const {
        double base = static_cast<double>(initial.count());
        for (int i = 1; i < attempt && base < static_cast<double>(max.count()); ++i) base *= 2;
        base = std::min(base, static_cast<double>(max.count()));
        jitter = std::clamp(jitter, 0.0, 1.0);
        return std::chrono::milliseconds(static_cast<long long>(base * (0.5 + 0.5 * jitter)));
    }
};

}  // namespace exo
