#pragma once
#include <chrono>

#include "core/record.hpp"

namespace exo {

// A polled record on its way through the pipeline, with what the retries so
// far have learned about it.
struct PendingRecord {
    Record record;
    int attempts = 0;   // handler runs that failed retryably
    int nacks = 0;      // times another owner held the key (CONFLICT)
    int gap_waits = 0;  // times parked for a missing predecessor
    std::chrono::steady_clock::time_point polled_at = std::chrono::steady_clock::now();
    // Strict sequences: when the record was first held back for a gap.
    std::chrono::steady_clock::time_point gap_since{};
};

}  // namespace exo
