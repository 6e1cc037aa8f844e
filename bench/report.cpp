#include "report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>

namespace exo::bench {
namespace {

std::string number(double v, int decimals = 0) {
    if (std::isnan(v)) return "n/a";
    return fmt::format("{:.{}f}", v, decimals);
}

// "median=X runs=[a, b, c]" over the values `get` picks from each run.
std::string series(const std::vector<ScenarioResult>& runs,
                   const std::function<double(const ScenarioResult&)>& get, int decimals = 0) {
    std::vector<double> values;
    std::string list;
    for (const auto& r : runs) {
        double v = r.failure.empty() ? get(r) : kNotMeasured;
        if (!std::isnan(v)) values.push_back(v);
        list += (list.empty() ? "" : ", ") + number(v, decimals);
    }
    return fmt::format("median={} runs=[{}]", number(median(values), decimals), list);
}

double per_record(double total, const ScenarioResult& r) {
    return r.records == 0 ? kNotMeasured : total / static_cast<double>(r.records);
}

void print_cpu(std::ostream& out, const std::string& name,
               const std::vector<ScenarioResult>& runs) {
    // CPU milliseconds per 1000 records, medians; the roles of this process first.
    std::map<std::string, std::vector<double>> roles;
    std::vector<double> self, pg, redis, busy;
    for (const auto& r : runs) {
        if (!r.failure.empty() || r.cpu.wall_s <= 0) continue;
        double per_k = 1e6 / static_cast<double>(r.records);  // s -> ms per 1000 records
        self.push_back(r.cpu.self_s * per_k);
        pg.push_back(r.cpu.postgres_s * per_k);
        redis.push_back(r.cpu.redis_s * per_k);
        busy.push_back(r.cpu.machine_busy_share * 100);
        for (const auto& [role, s] : r.cpu.self_by_role) roles[role].push_back(s * per_k);
    }
    if (self.empty()) return;
    std::string parts;
    for (auto& [role, v] : roles)
        if (median(v) >= 0.5) parts += fmt::format(" {}={}", role, number(median(v), 1));
    double wall_ms = 0;
    for (const auto& r : runs)
        if (r.failure.empty())
            wall_ms = r.seconds_to_finished * 1e6 / static_cast<double>(r.records);
    out << fmt::format(
        "{} cpu_ms_per_1000_records exo_bench={} [{} ] postgres={} redis-server={} "
        "(wall_ms_per_1000_records={} machine_busy={}% of {} cores)\n",
        name, number(median(self), 1), parts, number(median(pg), 1), number(median(redis), 1),
        number(wall_ms, 1), number(median(busy), 0), runs.front().cpu.cores);
}

void print_scenario(std::ostream& out, const std::string& name,
                    const std::vector<ScenarioResult>& runs) {
    const auto& first = runs.front();
    bool paced = !std::isnan(first.offered_rate);
    out << fmt::format("{} records median={} (per run)\n", name, first.records);
    if (paced) {
        out << fmt::format("{} offered_records_per_s {}\n", name,
                           series(runs, [](const auto& r) { return r.offered_rate; }));
        out << fmt::format("{} produced_records_per_s {}\n", name,
                           series(runs, [](const auto& r) { return r.produced_rate; }));
        for (double p : {50.0, 99.0}) {
            out << fmt::format(
                "{} p{}_latency_ms (produce -> PostgreSQL commit, after 1 s warm-up) {}\n", name, p,
                series(
                    runs, [p](const auto& r) { return percentile(r.commit_latency_ms, p); }, 1));
        }
        out << fmt::format(
            "{} p99_latency_ms (produce -> handler start, first attempt) {}\n", name,
            series(
                runs, [](const auto& r) { return percentile(r.handler_latency_ms, 99); }, 1));
        if (!first.latency_note.empty())
            out << fmt::format("{} note: {}\n", name, first.latency_note);
    } else {
        out << fmt::format("{} records_per_s {}\n", name,
                           series(runs, [](const auto& r) { return r.records_per_s(); }));
        out << fmt::format("{} records_per_s_to_all_finished {}\n", name,
                           series(runs, [](const auto& r) { return r.records_per_s_finished(); }));
        out << fmt::format("{} seconds_first_poll_to_last_commit {}\n", name,
                           series(
                               runs, [](const auto& r) { return r.seconds_to_committed; }, 2));
    }
    if (!std::isnan(first.poll_to_durable_p50_ms) || first.stats.batches > 0) {
        const char* what = paced ? "" : ", includes the wait of the pre-produced backlog";
        out << fmt::format("{} p50_latency_ms (poll -> durable outcome, PipelineStats{}) {}\n",
                           name, what,
                           series(
                               runs, [](const auto& r) { return r.poll_to_durable_p50_ms; }, 1));
        out << fmt::format("{} p99_latency_ms (poll -> durable outcome, PipelineStats{}) {}\n",
                           name, what,
                           series(
                               runs, [](const auto& r) { return r.poll_to_durable_p99_ms; }, 1));
    }
    out << fmt::format("{} peak_rss_kb (VmHWM during the scenario) {}\n", name,
                       series(runs, [](const auto& r) { return double(r.peak_rss_kb); }));
    out << fmt::format(
        "{} peak_rss_above_start_kb {} (the scenario's own memory: peak minus RSS at its start)\n",
        name, series(runs, [](const auto& r) {
            return double(r.peak_rss_kb - r.memory_before.vm_rss_kb);
        }));
    out << fmt::format(
        "{} heap_in_use_before_kb {} (malloc'd and not freed when the scenario started)\n", name,
        series(runs, [](const auto& r) { return double(r.memory_before.heap_in_use_kb); }));
    out << fmt::format("{} rss_before_kb {}\n", name, series(runs, [](const auto& r) {
                           return double(r.memory_before.vm_rss_kb);
                       }));
    if (!paced && name.rfind("postgres-bare", 0) != 0)
        out << fmt::format("{} rss_growth_second_half_kb {}\n", name,
                           series(runs, [](const auto& r) {
                               return r.rss_at_half_kb > 0 && r.rss_at_end_kb > 0
                                          ? double(r.rss_at_end_kb - r.rss_at_half_kb)
                                          : kNotMeasured;
                           }));
    out << fmt::format(
        "{} redis_round_trips_per_record {}\n", name,
        series(
            runs, [](const auto& r) { return per_record(r.redis_round_trips, r); }, 3));
    out << fmt::format(
        "{} postgres_round_trips_per_record {} (counted at libpq)\n", name,
        series(
            runs, [](const auto& r) { return per_record(r.postgres_round_trips, r); }, 3));
    out << fmt::format(
        "{} postgres_round_trips_per_record_as_reported {} (PipelineStats, or the bare "
        "scenario's own count)\n",
        name,
        series(
            runs, [](const auto& r) { return per_record(r.postgres_round_trips_reported, r); }, 3));
    if (first.stats.batches > 0) {
        out << fmt::format(
            "{} records_per_batch {}\n", name,
            series(
                runs,
                [](const auto& r) { return double(r.stats.polled) / double(r.stats.batches); }, 1));
    }
    const auto& s = runs.back().stats;
    out << fmt::format(
        "{} outcomes (last run) applied={} duplicates_redis={} duplicates_postgres={} stale={} "
        "conflicts={} retries={} dead_lettered={} batch_failures={}\n",
        name, s.applied, s.duplicates_redis, s.duplicates_postgres, s.stale, s.conflicts, s.retries,
        s.dead_lettered, s.batch_failures);
    print_cpu(out, name, runs);
    std::string verdicts;
    bool all = true;
    for (const auto& r : runs) {
        verdicts +=
            (verdicts.empty() ? "" : ", ") + std::string(r.failure.empty() ? "PASS" : "FAIL");
        all = all && r.failure.empty();
    }
    out << fmt::format("{} correctness {} runs=[{}]\n", name, all ? "PASS" : "FAIL", verdicts);
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (!runs[i].failure.empty())
            out << fmt::format("{} FAILURE run {}: {}\n", name, i + 1, runs[i].failure);
}

}  // namespace

void BenchResults::add(ScenarioResult r) {
    if (!by_name.count(r.name)) order.push_back(r.name);
    by_name[r.name].push_back(std::move(r));
}

const std::vector<ScenarioResult>* BenchResults::find(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &it->second;
}

double median_rate(const std::vector<ScenarioResult>& runs) {
    std::vector<double> v;
    for (const auto& r : runs)
        if (r.failure.empty()) v.push_back(r.records_per_s());
    return median(v);
}

Verdict print_report(std::ostream& out, const BenchOptions& o, const Calibration& cal,
                     const BenchResults& results) {
    Verdict verdict;
    out << "\n=== exo_bench results (medians of " << o.runs
        << " runs, scenarios side by side) ===\n";
    out << fmt::format("calibration postgres_round_trip_us={} redis_round_trip_us={}\n",
                       number(cal.postgres_round_trip_us, 1), number(cal.redis_round_trip_us, 1));
    for (const auto& name : results.order) {
        const auto& runs = results.by_name.at(name);
        print_scenario(out, name, runs);
        for (const auto& r : runs) verdict.correct = verdict.correct && r.failure.empty();
    }

    auto rate = [&](const std::string& name) {
        auto* runs = results.find(name);
        return runs ? median_rate(*runs) : kNotMeasured;
    };
    double exo = rate("exo-default"), base = rate("per-record"), bare = rate("postgres-bare");
    out << fmt::format("ratio exo-default/per-record={} (records/s; per-record ran {} records)\n",
                       number(exo / base, 2), o.baseline_records);
    const double bare_set = rate("postgres-bare-set");
    out << fmt::format("ratio exo-default/postgres-bare={}\n", number(exo / bare, 2));
    out << fmt::format("ratio exo-default/postgres-bare-set={}\n", number(exo / bare_set, 2));
    if (results.find("postgres-bare-savepoints"))
        out << fmt::format("ratio exo-default/postgres-bare-savepoints={}\n",
                           number(exo / rate("postgres-bare-savepoints"), 2));

    auto target = [&](const std::string& what, bool measured, bool met, const std::string& got) {
        if (!measured) {
            out << fmt::format("target {}: NOT MEASURED\n", what);
            return;
        }
        verdict.targets_checked++;
        if (met) verdict.targets_met++;
        out << fmt::format("target {}: {} ({})\n", what, met ? "PASS" : "FAIL", got);
    };
    auto* exo_runs = results.find("exo-default");
    bool exo_correct = exo_runs != nullptr;
    if (exo_runs)
        for (const auto& r : *exo_runs) exo_correct = exo_correct && r.failure.empty();
    // When it fails, postgres-bare-set is the measured limit of exo's SQL shape on this machine.
    target("exo-default >= 22000 records/s with the correctness check passing", !std::isnan(exo),
           exo >= 22000 && exo_correct,
           number(exo) + " records/s; limit of exo's SQL shape (postgres-bare-set): " +
               number(bare_set) + " records/s");
    target("exo-default >= 10x per-record", !std::isnan(exo / base), exo / base >= 10,
           number(exo / base, 2) + "x");
    // The alternative a team weighs exo against: the hand-written inbox consumer.
    const double peer = rate("inbox-peer");
    out << fmt::format("ratio exo-default/inbox-peer={}\n", number(exo / peer, 2));
    target("exo-default >= 0.5x inbox-peer (the hand-written inbox consumer)",
           !std::isnan(exo / peer), exo / peer >= 0.5, number(exo / peer, 2) + "x");
    out << fmt::format("ratio exo-default/exo-record-handler={}\n",
                       number(exo / rate("exo-record-handler"), 2));
    const double per_record_sql = rate("exo-per-record-sql");
    out << fmt::format("ratio exo-default/exo-per-record-sql={}\n",
                       number(exo / per_record_sql, 2));
    target("exo-default >= 3x exo-per-record-sql (the per-record-statement pipeline)",
           !std::isnan(exo / per_record_sql), exo / per_record_sql >= 3,
           number(exo / per_record_sql, 2) + "x");
    target("exo-default >= 60% of postgres-bare-set", !std::isnan(exo / bare_set),
           exo / bare_set >= 0.6, number(exo / bare_set * 100, 1) + "%");
    if (auto* paced = results.find("exo-paced")) {
        std::vector<double> p99;
        for (const auto& r : *paced)
            if (r.failure.empty() && !r.commit_latency_ms.empty())
                p99.push_back(percentile(r.commit_latency_ms, 99));
        double m = median(p99);
        target("p99 latency < 100 ms at 50% of the max rate", !std::isnan(m), m < 100,
               number(m, 1) + " ms produce->commit");
    } else {
        target("p99 latency < 100 ms at 50% of the max rate", false, false, "");
    }
    if (exo_runs) {
        std::vector<double> growth;
        for (const auto& r : *exo_runs)
            if (r.rss_at_half_kb > 0 && r.rss_at_end_kb > 0)
                growth.push_back(double(r.rss_at_end_kb - r.rss_at_half_kb));
        double g = median(growth);
        target("memory bounded (RSS growth over the second half of exo-default <= 8 MiB)",
               !std::isnan(g), g <= 8192, number(g) + " kB");
    }
    out << fmt::format(
        "process peak_rss_kb={} (the whole process: VmHWM / ru_maxrss, kept across the "
        "per-scenario "
        "resets; includes the mock cluster and the produced workloads)\n",
        process_peak_rss_kb());
    out << fmt::format("result correctness={} targets_met={}/{}\n",
                       verdict.correct ? "PASS" : "FAIL", verdict.targets_met,
                       verdict.targets_checked);
    return verdict;
}

}  // namespace exo::bench
