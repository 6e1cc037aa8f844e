#pragma once
// The per-key concurrency scenarios side by side (keyed_scenario.hpp): one Markdown row per
// wait (client, server) with the three orderings' medians and the ratios the issue asks
// for, to paste into docs/performance.md. Pure formatting, as report.hpp.
#include <ostream>

#include "bench_options.hpp"
#include "report.hpp"

namespace exo::bench {

// The Parallel Consumer's figure the issue compares with: ordering KEY, 10,000 messages,
// 0-5 ms of work each (its README).
inline constexpr double kParallelConsumerKeyRate = 4500;

// Prints nothing when no keyed scenario ran.
void print_keyed_table(std::ostream& out, const BenchOptions& options, const BenchResults& results);

}  // namespace exo::bench
