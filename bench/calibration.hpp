#pragma once
// One round trip to each server, measured before the scenarios: the unit in
// which the pipeline's cost is explained (round trips per record x this).
// Also finds the servers' process ids, for the CPU breakdown.
#include "bench_options.hpp"
#include "measure.hpp"

namespace exo::bench {

struct Calibration {
    double postgres_round_trip_us = 0;  // prepared SELECT 1, one at a time
    double redis_round_trip_us = 0;     // PING, one at a time
    ServerProcesses servers;            // whose CPU time the scenarios report
};

// Throws if a server cannot be reached.
Calibration calibrate(const BenchOptions& options, int iterations = 2000);

}  // namespace exo::bench
