#include "pipeline_scenario.hpp"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <exception>
#include <iostream>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <stop_token>
#include <thread>
#include <unordered_map>

#include "app/consumer_process.hpp"
#include "bench_ledger.hpp"
#include "core/failpoints.hpp"
#include "flaky_ledger.hpp"
#include "kafka/group_progress.hpp"
#include "kafka/producer.hpp"
#include "latency_handler.hpp"
#include "ledger.hpp"
#include "metrics_scraper.hpp"
#include "observability/http_endpoint.hpp"
#include "paced_producer.hpp"
#include "pg_cost_probe.hpp"
#include "pg_round_trips.hpp"

namespace exo::bench {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Threads the daemon starts inherit the name of the thread that starts them:
// naming the daemon's thread names its workers too.
constexpr const char* kDaemonThreadName = "exo-worker";

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// The daemon on its own thread, stopped (as by SIGTERM) and joined on destruction.
class DaemonThread {
public:
    DaemonThread(const Config& config, const HandlerRegistry& registry,
                 const std::string& bootstrap)
        : process_(config, registry, failpoints_, bootstrap) {
        thread_ = std::jthread([this](std::stop_token stop) {
            ::pthread_setname_np(::pthread_self(), kDaemonThreadName);
            tid_ = current_thread_id();
            try {
                process_.run(stop);
            } catch (...) {
                error_ = std::current_exception();
                failed_ = true;
            }
        });
    }
    ~DaemonThread() { stop(); }

    const Daemon& daemon() const { return process_.daemon(); }
    int thread_id() const { return tid_.load(); }
    bool failed() const { return failed_.load(); }
    std::string error() const {
        try {
            if (error_) std::rethrow_exception(error_);
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    }
    void stop() {
        if (!thread_.joinable()) return;
        thread_.request_stop();
        thread_.join();
    }

private:
    Failpoints failpoints_;
    ConsumerProcess process_;
    std::exception_ptr error_;
    std::atomic<bool> failed_{false};
    std::atomic<int> tid_{0};
    std::jthread thread_;  // last: joined before the daemon goes
};

std::map<int, std::string> thread_roles(const DaemonThread& d) {
    return {{current_thread_id(), "bench-main"}, {d.thread_id(), "exo-poll"}};
}

// True when the outbox holds no row the relay has still to publish.
bool outbox_drained(pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    // Marked: the benchmark's, not the daemon's (--pg-costs leaves it out).
    return !tx.exec(std::string(kBenchStatementMark) +
                    " SELECT EXISTS (SELECT 1 FROM exo_outbox_pending)")[0][0]
                .as<bool>();
}

// What the relay must have done by the end of an emitting run: one outbox row per applied
// event, every one sent, and at least as many records on the topic (the relay publishes at
// least once: a retried round may publish a row again, with the same exo-outbox-id header).
std::string check_emits(BenchWorld& world, const Isolation& iso, const PipelineScenario& s) {
    pqxx::connection c(iso.uri);
    pqxx::nontransaction tx(c);
    auto row = tx.exec(
        "SELECT (SELECT count(*) FROM exo_outbox), (SELECT count(*) FROM exo_outbox_pending)")[0];
    auto rows = row[0].as<std::int64_t>(), pending = row[1].as<std::int64_t>();
    auto expected = static_cast<std::int64_t>(s.workload->workload.unique_events);
    auto published = world.messages_in(s.applied_topic);
    std::string problems;
    if (rows != expected)
        problems += fmt::format("exo_outbox has {} rows, expected {} (one per applied event); ",
                                rows, expected);
    if (pending != 0) problems += fmt::format("{} outbox rows still unsent; ", pending);
    if (published < expected)
        problems += fmt::format("{} holds {} records, expected at least {}; ", s.applied_topic,
                                published, expected);
    return problems;
}

}  // namespace

ScenarioResult run_pipeline_scenario(BenchWorld& world, const Isolation& iso,
                                     const PipelineScenario& s, const BenchOptions& options) {
    const auto& topic = s.own_work ? s.own_work->topic : s.workload->topic;
    ScenarioResult r;
    r.name = s.name;
    r.records = s.own_work ? s.own_work->records : s.workload->size();
    const bool paced = s.paced_rate > 0;

    HandlerRegistry registry;
    LatencyRecorder recorder;
    if (s.own_work)
        s.own_work->register_handler(registry);
    else if (paced)
        register_timed_ledger(registry, recorder);
    else if (s.flaky_every > 0)
        registry.add("ledger",
                     [every = s.flaky_every, named = s.flaky_named](const HandlerOptions&) {
                         return std::make_unique<FlakyLedger>(every, named);
                     });
    else if (s.record_handler)
        registry.add("ledger", [](const HandlerOptions&) {
            return std::make_unique<handlers::LedgerRecordHandler>(bench_ledger_options());
        });
    else
        registry.add("ledger", [topic = s.applied_topic](const HandlerOptions&) {
            return std::make_unique<handlers::LedgerHandler>(bench_ledger_options(topic));
        });
    const bool emits = !s.applied_topic.empty();

    begin_memory_window();
    r.memory_before = read_memory();
    auto deadline = Clock::now() + options.timeout;
    PacedSend sent;
    // Opened before the clock starts: the drained check's round trips are not the daemon's.
    std::optional<pqxx::connection> outbox_check;
    if (emits) outbox_check.emplace(iso.uri);
    // Opened, and the sessions counted, before the daemon starts: its sessions are the
    // ones waited for at the end.
    PgCostWindow pg_window(options.pg_costs, options.postgres_uri, iso.schema);
    Clock::time_point start;
    CpuSnapshot cpu_start;
    std::uint64_t sends_start = 0;
    {
        DaemonThread daemon(s.config, registry, world.bootstrap());
        const auto& stats = daemon.daemon().stats();
        // observability=1: what a production deployment adds, measured with it.
        std::optional<ObservabilityEndpoint> endpoint;
        std::optional<AttachedDaemon> served;
        std::optional<MetricsScraper> scraper;
        if (s.config.observability.enabled()) {
            endpoint.emplace(*s.config.observability.listen, std::chrono::minutes(1));
            served.emplace(&*endpoint, daemon.daemon());
            scraper.emplace(s.config.observability.listen->port);
        }

        if (paced) {
            // Start producing once the group has its partitions, so the 3 s first
            // join of the mock cluster is not counted as latency.
            auto beside_ready = [&s] { return s.beside == nullptr || s.beside->ready(); };
            while (!(daemon.daemon().ready() && beside_ready()) && !daemon.failed() &&
                   !(s.beside != nullptr && s.beside->failed()) && Clock::now() < deadline)
                std::this_thread::sleep_for(milliseconds(5));
            start = Clock::now();
            cpu_start = cpu_snapshot(thread_roles(daemon), s.servers);
            sends_start = postgres_sends();
            pg_window.start();
            r.offered_rate = s.paced_rate;
            r.warm_up_s = s.warm_up_seconds;
            if (daemon.daemon().ready() && beside_ready())
                sent = produce_paced(world.bootstrap(), *s.workload, s.paced_rate);
            r.produced_rate = sent.achieved_rate;
        } else {
            while (stats.polled.load() == 0 && !daemon.failed() && Clock::now() < deadline)
                std::this_thread::sleep_for(milliseconds(1));
            start = Clock::now();
            cpu_start = cpu_snapshot(thread_roles(daemon), s.servers);
            sends_start = postgres_sends();
            pg_window.start();
        }

        const auto total = static_cast<std::uint64_t>(r.records);
        auto next_lag_check = Clock::now();
        bool finished = false;
        while (true) {
            if (daemon.failed()) {
                r.failure = "the daemon failed: " + daemon.error();
                break;
            }
            auto now = Clock::now();
            if (now > deadline) {
                r.failure = fmt::format(
                    "timed out after {} s: {} of {} records finished, offsets {}committed{} "
                    "(raise --timeout-s?)",
                    options.timeout.count(), stats.finished(), total,
                    std::isnan(r.seconds_to_committed) ? "not " : "",
                    emits ? std::string(", outbox ") +
                                (std::isnan(r.seconds_to_published) ? "not drained" : "drained")
                          : "");
                break;
            }
            auto done = stats.finished();
            if (r.rss_at_half_kb == 0 && done * 2 >= total)
                r.rss_at_half_kb = read_memory().vm_rss_kb;
            if (!finished && done >= total) {
                finished = true;
                r.seconds_to_finished = seconds_between(start, now);
                r.cpu = cpu_between(cpu_start, cpu_snapshot(thread_roles(daemon), s.servers));
                r.postgres_round_trips = static_cast<double>(postgres_sends() - sends_start);
                r.rss_at_end_kb = read_memory().vm_rss_kb;
            }
            if (finished && now >= next_lag_check) {
                if (std::isnan(r.seconds_to_committed)) {
                    auto lag = group_lag(world.bootstrap(), iso.group, topic);
                    if (lag && *lag == 0)
                        r.seconds_to_committed = seconds_between(start, Clock::now());
                }
                // Every record finished: every emit is in the outbox; wait for the relay.
                if (emits && std::isnan(r.seconds_to_published) && outbox_drained(*outbox_check))
                    r.seconds_to_published = seconds_between(start, Clock::now());
                if (!std::isnan(r.seconds_to_committed) &&
                    (!emits || !std::isnan(r.seconds_to_published)))
                    break;
                next_lag_check = Clock::now() + milliseconds(20);
            }
            std::this_thread::sleep_for(milliseconds(2));
        }
        r.stats = StatsCopy::of(stats);
        auto ms = [](std::chrono::microseconds us) {
            return static_cast<double>(us.count()) / 1e3;
        };
        if (stats.finished() > 0) {
            r.poll_to_durable_p50_ms = ms(stats.latency.percentile(0.50));
            r.poll_to_durable_p99_ms = ms(stats.latency.percentile(0.99));
        }
        daemon.stop();
        if (r.failure.empty() && daemon.failed())
            r.failure = "the daemon failed while stopping: " + daemon.error();
    }
    // The daemon stopped: its sessions go, reporting their last statistics.
    r.pg_costs = pg_window.finish(r.records, r.cpu.wall_s > 0 ? r.cpu.postgres_s : kNotMeasured);
    r.peak_rss_kb = read_memory().vm_hwm_kb;
    r.redis_round_trips = static_cast<double>(r.stats.redis_round_trips);
    r.postgres_round_trips_reported = static_cast<double>(r.stats.postgres_round_trips);
    if (paced) {
        const std::int64_t first_us = sent.first_us();
        // Kafka timestamps have millisecond resolution: compare in whole milliseconds.
        auto warm_up_end_us =
            first_us / 1000 * 1000 + static_cast<std::int64_t>(s.warm_up_seconds * 1e6);
        for (const auto& [produced_us, ms] : recorder.samples())
            if (produced_us >= warm_up_end_us) r.handler_latency_ms.push_back(ms);
        commit_latencies(iso, *s.workload, sent, s.warm_up_seconds, r);
    }
    if (r.failure.empty()) {
        auto problems = s.own_work ? s.own_work->check(iso)
                                   : world.check_exactly_once(iso, s.workload->workload);
        if (emits) problems += check_emits(world, iso, s);
        if (s.without_redis && r.stats.redis_round_trips > 0)
            problems += fmt::format("the daemon sent Redis {} commands, expected none; ",
                                    r.stats.redis_round_trips);
        if (!problems.empty()) r.failure = "exactly-once check FAILED: " + problems;
    }
    return r;
}

StatsCopy StatsCopy::of(const PipelineStats& s) {
    StatsCopy c;
    c.polled = s.polled;
    c.applied = s.applied;
    c.duplicates_redis = s.duplicates_redis;
    c.duplicates_postgres = s.duplicates_postgres;
    c.duplicates_in_batch = s.duplicates_in_batch;
    c.transactions = s.set_based_transactions;
    c.stale = s.stale;
    c.conflicts = s.conflicts;
    c.retries = s.retries;
    c.dead_lettered = s.dead_lettered;
    c.batches = s.batches;
    c.batch_failures = s.batch_failures;
    c.redis_round_trips = s.redis_round_trips;
    c.postgres_round_trips = s.postgres_round_trips;
    return c;
}

}  // namespace exo::bench
