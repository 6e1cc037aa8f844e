#pragma once
// How often the relay reads its backlog gauges.

#include <algorithm>
#include <chrono>

namespace exo {

// The wait before the next reading of the backlog gauges, given how long the
// last one took. The reading is a skip scan over the pending units, O(units):
// a few milliseconds for a few units, over a second for a million (each with
// its own key). Read every second regardless, it would keep a PostgreSQL core
// busy exactly when the relay is furthest behind; this keeps it to a twentieth
// of the time at most, and once a second when it is cheap. The gauges are then
// at most twenty readings' time old, which the dashboard's minute windows absorb.
constexpr std::chrono::milliseconds next_backlog_reading(std::chrono::milliseconds took) {
    constexpr std::chrono::milliseconds kEvery{1000};
    constexpr int kShareOfTime = 20;  // at most 1/20 of the relay's session reads the gauges
    return std::max(kEvery, took * kShareOfTime);
}

}  // namespace exo
