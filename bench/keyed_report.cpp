#include "keyed_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "keyed_scenario.hpp"

namespace exo::bench {
namespace {

std::string cell(double v, int decimals = 0) {
    return std::isnan(v) ? "-" : fmt::format("{:.{}f}", v, decimals);
}

}  // namespace

void print_keyed_table(std::ostream& out, const BenchOptions& o, const BenchResults& results) {
    bool any = false;
    for (const auto& spec : kKeyedScenarios) any = any || results.find(spec.name) != nullptr;
    if (!any) return;
    auto rate = [&results](const std::string& name) {
        const auto* runs = results.find(name);
        return runs ? median_rate(*runs) : kNotMeasured;
    };
    out << fmt::format(
        "\n=== per-key concurrency (Markdown; {} records over {} keys, {} partitions, {:.1f} ms "
        "wait per record, batch_size {}, fsync on; records/s medians of {} runs) "
        "===\n\n",
        o.keyed_records, o.keyed_keys, o.keyed_partitions, o.keyed_wait_us / 1000.0,
        o.keyed_batch_size > 0 ? o.keyed_batch_size : PipelineConfig{}.batch_size, o.runs);
    out << fmt::format(
        "| wait (concurrency N) | partition, default concurrency | partition, concurrency N | key, "
        "concurrency N | key / partition (concurrency N) | key / partition (default concurrency) | "
        "key / Parallel Consumer ({}/s) |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n",
        grouped(kParallelConsumerKeyRate));
    const std::pair<KeyedWait, const char*> waits[] = {
        {KeyedWait::client, "client: sleep_for in handle(), in the transaction"},
        {KeyedWait::server, "server: SELECT pg_sleep(), in the transaction"},
        {KeyedWait::outside, "outside: sleep_for in before_transaction(), before it"}};
    for (const auto& [wait, described] : waits) {
        const char* name = wait == KeyedWait::client   ? "client"
                           : wait == KeyedWait::server ? "server"
                                                       : "outside";
        const double c1 = rate(fmt::format("keyed-{}-partition-c1", name));
        const double part = rate(fmt::format("keyed-{}-partition", name));
        const double key = rate(fmt::format("keyed-{}-key", name));
        if (std::isnan(c1) && std::isnan(part) && std::isnan(key)) continue;
        std::string row = fmt::format("{} (N = {}", described, keyed_concurrency(o, wait));
        if (wait == KeyedWait::outside)
            row += fmt::format(", outside_threads {}", o.keyed_outside_threads);
        out << fmt::format("| {}) | {} | {} | {} | {} | {} | {} |\n", row, grouped(c1),
                           grouped(part), grouped(key), cell(key / part, 1), cell(key / c1, 1),
                           cell(key / kParallelConsumerKeyRate, 2));
    }
    out << "\n(records/s from the first poll to the last offset commit, each run checked: every "
           "record's effect row exactly once, each key's records applied in produced order.)\n";
}

}  // namespace exo::bench
