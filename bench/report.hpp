#pragma once
// The benchmark's output: one line per figure and scenario (medians over the
// runs, with every run's value), then the ratios and PASS/FAIL against the
// targets listed in docs/performance.md. Pure formatting: no I/O but the stream it writes to.
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "calibration.hpp"
#include "scenario_result.hpp"

namespace exo::bench {

// Scenario names in the order they ran, and their results per run.
struct BenchResults {
    std::vector<std::string> order;
    std::map<std::string, std::vector<ScenarioResult>> by_name;
    std::map<std::string, std::string> skipped;  // scenario -> why it could not run
    void add(ScenarioResult r);
    const std::vector<ScenarioResult>* find(const std::string& name) const;
    void skip(const std::string& name, std::string why) { skipped[name] = std::move(why); }
    const std::string* why_skipped(const std::string& name) const;
};

// 12345.6 -> "12,346" (NaN: "n/a"): the summary tables are read by people.
std::string grouped(double v);

// Median records/s (to the last commit) of a scenario's completed runs; NaN if none.
double median_rate(const std::vector<ScenarioResult>& runs);

struct Verdict {
    bool correct = true;  // every run of every scenario completed and passed the check
    int targets_met = 0;
    int targets_checked = 0;
};

Verdict print_report(std::ostream& out, const BenchOptions& options, const Calibration& calibration,
                     const BenchResults& results);

}  // namespace exo::bench
