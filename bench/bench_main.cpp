// exo_bench: the benchmark of docs/performance.md. The composition root: parses the
// options, measures a round trip to each server, then per run sets up a
// BenchWorld (mock Kafka with the workloads produced, a schema per scenario),
// runs the scenarios side by side and finally prints the report.
//
// Exit status: 0 when every scenario completed and passed the exactly-once
// check (targets missed are reported as FAIL lines, not in the status); 1 when
// a scenario failed or a check did not pass; 2 for bad usage or a setup error.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench_options.hpp"
#include "bench_world.hpp"
#include "calibration.hpp"
#include "config/config.hpp"
#include "config/config_parser.hpp"
#include "config_overrides.hpp"
#include "inbox_peer_scenario.hpp"
#include "keyed_scenario.hpp"
#include "measure.hpp"
#include "metrics_scraper.hpp"
#include "paced_producer.hpp"
#include "pipeline_scenario.hpp"
#include "plain_consumer.hpp"
#include "postgres_bare.hpp"
#include "report.hpp"

namespace exo::bench {
namespace {

// exo without Redis (issue "Throughput", item 4): the PostgreSQL-only claim mode, set as
// a user's exo.yaml would: claim.store postgres, and none of the keys that configure only
// Redis (the parser refuses them there). A build whose config lacks claim.store skips the
// scenario with the parser's message (apply_config_overrides).
constexpr const char* kNoRedisConfig[] = {"claim.store=postgres",      "redis=~",
                                          "claim.lease_ms=~",          "claim.completed_ttl_ms=~",
                                          "claim.verify_duplicates=~", "pipeline.on_redis_down=~"};

void progress(const ScenarioResult& r, int run, int runs) {
    if (!std::isnan(r.offered_rate))
        std::cerr << fmt::format(
            "[bench] run {}/{} {}: {} records at {:.0f}/s offered, produce -> {} p50/p99 "
            "{:.1f}/{:.1f} ms{}{}\n",
            run, runs, r.name, r.records, r.offered_rate, r.handler_point,
            percentile(r.handler_latency_ms, 50), percentile(r.handler_latency_ms, 99),
            r.commit_latency_ms.empty()
                ? ""
                : fmt::format(", produce -> commit p50/p99 {:.1f}/{:.1f} ms",
                              percentile(r.commit_latency_ms, 50),
                              percentile(r.commit_latency_ms, 99)),
            r.failure.empty() ? "" : " FAILED: " + r.failure);
    else
        std::cerr << fmt::format(
            "[bench] run {}/{} {}: {} records, {:.0f} records/s ({:.2f} s to the last commit, "
            "{:.2f} s to all finished{}){}\n",
            run, runs, r.name, r.records, r.records_per_s(), r.seconds_to_committed,
            r.seconds_to_finished,
            std::isnan(r.seconds_to_published)
                ? ""
                : fmt::format(", {:.2f} s to every emit published", r.seconds_to_published),
            r.failure.empty() ? "" : " FAILED: " + r.failure);
}

class Bench {
public:
    Bench(const BenchOptions& o, const Calibration& calibration)
        : o_(o), servers_(calibration.servers) {}

    // Run 1 of every scenario, then run 2 of every scenario, ...: a machine that gets
    // busier or quieter during the invocation weighs on every scenario alike.
    void run_all() {
        for (int run = 1; run <= o_.runs; ++run) run_once(run);
    }
    const BenchResults& results() const { return results_; }

private:
    bool needs_main() const {
        for (const char* name :
             {"inbox-peer", "exo-default", "exo-emits", "exo-no-redis", "exo-record-handler",
              "exo-per-record-sql", "exo-flaky-named", "exo-flaky-unnamed", "postgres-bare",
              "postgres-bare-set", "postgres-bare-savepoints", "proto-set-framework",
              "proto-set-all"})
            if (o_.wants(name)) return true;
        for (const auto& e : o_.extras)
            if (o_.wants(extra_name(e)) || o_.wants(emits_name(e))) return true;
        return false;
    }
    bool needs_keyed() const {
        for (const auto& spec : kKeyedScenarios)
            if (o_.wants(spec.name)) return true;
        return false;
    }
    static std::string extra_name(const PipelineOverrides& e) { return "exo[" + e.spec + "]"; }
    // The latency run with an --extra scenario's settings.
    static std::string paced_name(const PipelineOverrides& e) {
        return "exo-paced[" + e.spec + "]";
    }
    // exo-emits with an --extra scenario's settings.
    static std::string emits_name(const PipelineOverrides& e) {
        return "exo-emits[" + e.spec + "]";
    }
    bool wants_paced_extra() const {
        for (const auto& e : o_.extras)
            if (o_.wants(paced_name(e))) return true;
        return false;
    }

    static std::function<void(Config&)> tune_for(const PipelineOverrides& e) {
        return [&e](Config& c) {
            if (e.concurrency) c.pipeline.concurrency = *e.concurrency;
            if (e.batch_size) c.pipeline.batch_size = *e.batch_size;
            if (e.linger_ms) c.pipeline.linger = std::chrono::milliseconds(*e.linger_ms);
            if (e.commit_interval_ms)
                c.kafka.commit_interval = std::chrono::milliseconds(*e.commit_interval_ms);
            if (e.observability)
                c.observability.listen = ObservabilityConfig::Listen{"127.0.0.1", free_port()};
            c = apply_config_overrides(c, e.config);
        };
    }

    Config default_config(BenchWorld& world, const Isolation& iso, const std::string& topic) const {
        auto c = world.pipeline_config(iso, topic);
        if (o_.concurrency) c.pipeline.concurrency = *o_.concurrency;
        return c;
    }

    void record(ScenarioResult r, int run) {
        progress(r, run, o_.runs);
        // Every paced exo run's trace (exo-paced, exo-steady-R), one file for the invocation.
        if (!o_.latency_csv.empty() && !r.commit_trace.empty()) {
            std::ofstream csv(o_.latency_csv, csv_started_ ? std::ios::app : std::ios::trunc);
            if (!csv_started_)
                csv << "scenario,run,seconds_after_first_produce,produce_to_commit_ms\n";
            csv_started_ = true;
            for (const auto& [t, ms] : r.commit_trace)
                csv << r.name << ',' << run << ',' << t << ',' << ms << '\n';
        }
        results_.add(std::move(r));
    }

    void pipeline(BenchWorld& world, int run, const std::string& name, const TopicWorkload& w,
                  const std::function<void(Config&)>& tune, double paced_rate = 0,
                  const std::function<void(PipelineScenario&)>& shape = {}) {
        auto iso = world.isolate(name);
        PipelineScenario s{name,    default_config(world, iso, w.topic), &w, paced_rate, 1.0,
                           servers_};
        if (shape) shape(s);
        try {
            tune(s.config);
        } catch (...) {  // a config override the parser refused
            world.clean_up(iso);
            throw;
        }
        auto r = run_pipeline_scenario(world, iso, s, o_);
        world.clean_up(iso);
        record(std::move(r), run);
    }

    void bare(BenchWorld& world, int run, const TopicWorkload& w, const std::string& name,
              BareMode mode) {
        if (!o_.wants(name)) return;
        BareOptions b;
        b.name = name;
        b.mode = mode;
        b.servers = servers_;
        // The same connections and batch size as exo-default.
        b.threads = o_.concurrency.value_or(PipelineConfig{}.concurrency);
        b.batch_size = PipelineConfig{}.batch_size;
        auto iso = world.isolate(b.name);
        auto r = run_postgres_bare(world, iso, w, b);
        world.clean_up(iso);
        record(std::move(r), run);
    }

    // The per-key concurrency scenarios over one keyed workload, produced once per run.
    void keyed(BenchWorld& world, int run) {
        if (!needs_keyed()) return;
        auto w = make_keyed_workload(world, fmt::format("keyed_r{}", run), o_.keyed_records,
                                     o_.keyed_keys, o_.keyed_partitions,
                                     o_.seed + static_cast<std::uint64_t>(run));
        double s = produce_keyed(world, w);
        std::string spread;
        for (auto n : w.per_partition) spread += (spread.empty() ? "" : "/") + std::to_string(n);
        std::cout << fmt::format(
                         "run {}/{}: produced {} records over {} keys to {} ({} partitions, "
                         "records per partition {}) in {:.1f} s\n",
                         run, o_.runs, w.records.size(), w.keys, w.topic, w.partitions, spread, s)
                  << std::flush;
        for (const auto& spec : kKeyedScenarios) {
            if (!o_.wants(spec.name) || results_.why_skipped(spec.name)) continue;
            auto iso = world.isolate(spec.name);
            try {
                auto scenario = keyed_scenario(world, iso, w, spec, o_, servers_);
                auto r = run_pipeline_scenario(world, iso, scenario, o_);
                world.clean_up(iso);
                record(std::move(r), run);
            } catch (const ConfigError& e) {
                world.clean_up(iso);
                results_.skip(spec.name,
                              "this build's exo.yaml has no per-key ordering or "
                              "pipeline.concurrency: " +
                                  std::string(e.what()));
                std::cerr << "[bench] " << spec.name
                          << " skipped: " << *results_.why_skipped(spec.name) << "\n";
            }
        }
    }

    // The steady-rate latency runs, per rate: exo with its defaults (exo-steady-R) and the
    // plain librdkafka consumer (plain-steady-R, the same consumer properties, its own group)
    // each consume a stream produced at that rate, one after the other on streams of the same
    // records, or with --steady-together both one stream at once. Producing starts when the
    // consumers have their partitions; the producer's first --steady-warm-up-s seconds are left
    // out of the percentiles.
    void steady(BenchWorld& world, int run) {
        const bool exo = o_.wants("exo-steady"), plain = o_.wants("plain-steady");
        if (!exo && !plain) return;
        for (double rate : o_.steady_rates) {
            const auto tag = fmt::format("{:.0f}", rate);
            const int count =
                std::max(1000, static_cast<int>(rate * (o_.steady_warm_up_s + o_.steady_seconds)));
            auto w = world.make_workload("steady" + tag, count);
            std::optional<PlainConsumer> beside;
            if (plain && (o_.steady_together || !exo))
                beside.emplace(world.bootstrap(),
                               fmt::format("bench_{}_r{}_plain_{}", ::getpid(), run, tag), w.topic,
                               world.consumer_properties());
            double produced_rate = kNotMeasured;
            if (exo) {
                pipeline(
                    world, run, "exo-steady-" + tag, w,
                    o_.steady_config ? tune_for(*o_.steady_config) : [](Config&) {}, rate,
                    [&](PipelineScenario& s) {
                        s.warm_up_seconds = o_.steady_warm_up_s;
                        if (beside) s.beside = &*beside;
                    });
                produced_rate = results_.find("exo-steady-" + tag)->back().produced_rate;
            }
            if (beside) record(plain_result(world, *beside, w, rate, produced_rate, exo), run);
            if (!plain || beside) continue;
            // Apart: the same records on a topic of their own, the plain consumer alone.
            auto alone = world.make_workload("steadyplain" + tag, count);
            PlainConsumer consumer(world.bootstrap(),
                                   fmt::format("bench_{}_r{}_plain_{}", ::getpid(), run, tag),
                                   alone.topic, world.consumer_properties());
            record(plain_result(world, consumer, alone, rate, kNotMeasured, false), run);
        }
    }

    // plain-steady-R's result once exo's run is over (or, alone, after producing `w` itself).
    ScenarioResult plain_result(BenchWorld& world, PlainConsumer& plain, const TopicWorkload& w,
                                double rate, double produced_rate, bool exo_produced) {
        ScenarioResult r;
        r.name = fmt::format("plain-steady-{:.0f}", rate);
        r.records = w.size();
        r.offered_rate = rate;
        r.warm_up_s = o_.steady_warm_up_s;
        r.handler_point = "poll return";
        auto deadline = std::chrono::steady_clock::now() + o_.timeout;
        auto wait = [&](const std::function<bool()>& done) {
            while (!done() && !plain.failed() && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        };
        CpuSnapshot cpu_start;
        if (!exo_produced) {
            wait([&] { return plain.ready(); });
            cpu_start = cpu_snapshot({}, servers_);
            if (plain.ready())
                produced_rate = produce_paced(world.bootstrap(), w, rate).achieved_rate;
        }
        r.produced_rate = produced_rate;
        if (!(produced_rate > 0)) {
            r.failure =
                "nothing was produced (exo-steady failed before producing, or the plain "
                "consumer got no partitions)";
            return r;
        }
        wait([&] { return plain.received() >= w.size(); });
        // Alone, the run's CPU is the plain consumer's (and the producer's, the broker's).
        if (!exo_produced) r.cpu = cpu_between(cpu_start, cpu_snapshot({}, servers_));
        plain.stop();
        if (plain.failed()) {
            r.failure = "the plain consumer failed: " + plain.error();
            return r;
        }
        if (plain.received() < w.size()) {
            r.failure = fmt::format("timed out after {} s: the plain consumer received {} of {}",
                                    o_.timeout.count(), plain.received(), w.size());
            return r;
        }
        std::int64_t first_us = INT64_MAX;
        for (const auto& [produced_us, ms] : plain.samples())
            first_us = std::min(first_us, produced_us);
        const auto warm_up_end_us = first_us + static_cast<std::int64_t>(o_.steady_warm_up_s * 1e6);
        for (const auto& [produced_us, ms] : plain.samples())
            if (produced_us >= warm_up_end_us) r.handler_latency_ms.push_back(ms);
        return r;
    }

    void run_once(int run) {
        BenchWorld world(o_, run);
        std::optional<TopicWorkload> main, baseline;
        if (needs_main()) {
            main = world.make_workload("main", o_.records);
            double s = world.produce_all(*main);
            std::cout
                << fmt::format(
                       "run {}/{}: produced {} records ({} unique events, {} duplicates, payload "
                       "{}..{} bytes, avg {:.0f}) to {} in {:.1f} s\n",
                       run, o_.runs, main->size(), main->workload.unique_events,
                       main->workload.duplicates, main->payload_bytes_min, main->payload_bytes_max,
                       main->payload_bytes_avg, main->topic, s)
                << std::flush;
        }
        if (o_.wants("per-record")) {
            baseline = world.make_workload("base", o_.baseline_records);
            world.produce_all(*baseline);
        }
        auto keep = [](Config&) {};

        if (o_.wants("inbox-peer")) {
            auto iso = world.isolate("inbox-peer");
            auto r = run_inbox_peer(world, iso, *main, o_, servers_);
            world.clean_up(iso);
            record(std::move(r), run);
        }

        if (o_.wants("exo-default")) pipeline(world, run, "exo-default", *main, keep);
        // The shipped ledger's default: each applied payment emitted through the outbox, the
        // relay on (config.hpp's default); done when the relay published every emit.
        if (o_.wants("exo-emits")) {
            const std::string applied = main->topic + ".applied";
            world.create_topic(applied);
            pipeline(world, run, "exo-emits", *main, keep, 0,
                     [&applied](PipelineScenario& s) { s.applied_topic = applied; });
        }
        for (std::size_t i = 0; i < o_.extras.size(); ++i) {
            const auto& e = o_.extras[i];
            if (!o_.wants(emits_name(e))) continue;
            // Its own output topic: every emits scenario counts what it published.
            const std::string applied = main->topic + ".applied-" + std::to_string(i + 1);
            world.create_topic(applied);
            pipeline(world, run, emits_name(e), *main, tune_for(e), 0,
                     [&applied](PipelineScenario& s) { s.applied_topic = applied; });
        }
        if (o_.wants("exo-no-redis") && !results_.why_skipped("exo-no-redis")) {
            std::vector<ConfigOverride> no_redis;
            for (const char* o : kNoRedisConfig) no_redis.push_back(parse_config_override(o));
            try {
                pipeline(
                    world, run, "exo-no-redis", *main,
                    [&no_redis](Config& c) { c = apply_config_overrides(c, no_redis); }, 0,
                    [](PipelineScenario& s) { s.without_redis = true; });
            } catch (const ConfigError& e) {
                results_.skip(
                    "exo-no-redis",
                    "this build's exo.yaml has no claim.store: postgres: " + std::string(e.what()));
                std::cerr << "[bench] exo-no-redis skipped: "
                          << *results_.why_skipped("exo-no-redis") << "\n";
            }
        }
        // Everything as exo-default but the handler: per-record statements.
        if (o_.wants("exo-record-handler"))
            pipeline(world, run, "exo-record-handler", *main, keep, 0,
                     [](PipelineScenario& s) { s.record_handler = true; });
        // The pipeline before set-based batches: exo-record-handler with the
        // framework's statements per record too (pipeline.framework_sql).
        if (o_.wants("exo-per-record-sql"))
            pipeline(
                world, run, "exo-per-record-sql", *main,
                [](Config& c) { c.pipeline.framework_sql = FrameworkSql::per_record; }, 0,
                [](PipelineScenario& s) { s.record_handler = true; });
        // What isolating a failed record costs: 0.5% of the records fail their
        // first attempt, the handler naming them or not.
        for (bool named : {true, false}) {
            const std::string name = named ? "exo-flaky-named" : "exo-flaky-unnamed";
            if (o_.wants(name))
                pipeline(world, run, name, *main, keep, 0, [named](PipelineScenario& s) {
                    s.flaky_every = 200;
                    s.flaky_named = named;
                });
        }
        for (const auto& e : o_.extras) {
            if (!o_.wants(extra_name(e))) continue;
            pipeline(world, run, extra_name(e), *main, tune_for(e));
        }
        if (o_.wants("per-record"))
            pipeline(world, run, "per-record", *baseline, [](Config& c) {
                c.pipeline.batch_size = 1;
                c.pipeline.concurrency = 1;
                c.pipeline.linger = std::chrono::milliseconds(0);
            });
        keyed(world, run);
        steady(world, run);
        bare(world, run, *main, "postgres-bare", BareMode::per_record);
        // The limit of exo-default's SQL shape: the framework's statements and
        // the batch ledger's set-based per transaction
        // (docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based).
        bare(world, run, *main, "postgres-bare-set", BareMode::set_all);
        bare(world, run, *main, "postgres-bare-savepoints", BareMode::per_record_savepoint);
        bare(world, run, *main, "proto-set-framework", BareMode::set_framework);
        bare(world, run, *main, "proto-set-all", BareMode::set_all);

        if ((o_.wants("exo-paced") || o_.wants("inbox-peer-paced") || wants_paced_extra()) &&
            o_.paced_seconds > 0) {
            double rate = o_.paced_rate.value_or(kNotMeasured);
            if (!o_.paced_rate)
                // Half of exo-default's median over the runs so far: runs interleave, so
                // run N is paced at what exo-default did in runs 1..N.
                if (auto* runs = results_.find("exo-default")) rate = median_rate(*runs) / 2;
            if (std::isnan(rate)) {
                std::cerr << "[bench] the paced runs skipped: no exo-default rate to take 50% of "
                             "(run exo-default or pass --paced-rate)\n";
                return;
            }
            // One second more than asked: the first is warm-up, left out of the percentiles.
            int count = std::max(1000, static_cast<int>(rate * (o_.paced_seconds + 1)));
            auto paced = world.make_workload("paced", count);
            if (o_.wants("exo-paced")) pipeline(world, run, "exo-paced", paced, keep, rate);
            for (const auto& e : o_.extras)
                if (o_.wants(paced_name(e)))
                    pipeline(world, run, paced_name(e), paced, tune_for(e), rate);
            // The peer at the same rate, its latency measured the same way.
            if (o_.wants("inbox-peer-paced")) {
                auto peer_paced = world.make_workload("peerpaced", count);
                auto iso = world.isolate("inbox-peer-paced");
                auto r =
                    run_inbox_peer(world, iso, peer_paced, o_, servers_, "inbox-peer-paced", rate);
                world.clean_up(iso);
                record(std::move(r), run);
            }
        }
    }

    const BenchOptions& o_;
    ServerProcesses servers_;
    BenchResults results_;
    bool csv_started_ = false;  // --latency-csv written (its header) already
};

void print_header(const BenchOptions& o) {
    PipelineConfig p;
    std::cout << fmt::format(
        "exo_bench records={} accounts={} partitions={} duplicate_ratio={} runs={} "
        "baseline_records={}\n",
        o.records, o.accounts, o.partitions, o.duplicate_ratio, o.runs, o.baseline_records);
    std::string props;
    for (const auto& [k, v] : o.kafka_properties) props += fmt::format(" {}={}", k, v);
    std::cout << fmt::format(
        "kafka: {}; consumer properties: {}{}\n",
        o.bootstrap.empty()
            ? std::string("the in-process mock cluster (librdkafka's rdkafka_mock)")
            : fmt::format("{} at {} (topics created per run, deleted after it){}",
                          o.kafka_label.empty() ? "a real cluster" : o.kafka_label, o.bootstrap,
                          o.broker_pid > 0 ? fmt::format(", broker pid {}", o.broker_pid) : ""),
        o.bootstrap.empty() ? "session.timeout.ms=6000 heartbeat.interval.ms=1000 "
                              "fetch.wait.max.ms=20"
                            : "librdkafka's defaults",
        props.empty() ? "" : "; --kafka-property" + props);
    if (o.wants("exo-steady") || o.wants("plain-steady"))
        std::cout << fmt::format(
            "steady: at each of {} records/s, {} s produced (librdkafka linger.ms 5), the first "
            "{} s left out; exo-steady-R ({}, the timed ledger) and plain-steady-R "
            "(librdkafka subscribe + poll, no processing, its own group) {}; latency from the "
            "record's CreateTime (ms resolution)\n",
            [&] {
                std::string r;
                for (double x : o.steady_rates) r += (r.empty() ? "" : ",") + grouped(x);
                return r;
            }(),
            o.steady_warm_up_s + o.steady_seconds, o.steady_warm_up_s,
            o.steady_config ? "exo's defaults with --steady-config " + o.steady_config->spec
                            : std::string("exo's defaults"),
            o.steady_together ? "consume the same topic at once (--steady-together)"
                              : "one after the other, each alone on a topic of the same records");
    std::cout << fmt::format(
        "exo-default config: concurrency={} batch_size={} linger_ms={} commit_interval_ms={} "
        "max_queued_per_partition={} (config.hpp defaults{}); binding: ledger, key /eventId, "
        "sequence strict /accountId /sequenceId\n",
        o.concurrency.value_or(p.concurrency), p.batch_size, p.linger.count(),
        KafkaConfig{}.commit_interval.count(), p.max_queued_per_partition,
        o.concurrency ? ", concurrency from --concurrency" : "");
    std::cout << "per-record config: concurrency=1 batch_size=1 linger_ms=0; its workload has "
              << o.baseline_records << " records (rates are compared as records/s)\n";
    std::cout
        << "postgres-bare: the pipeline's per-record SQL via exo's prepared statements, "
           "transactions of batch_size records, one connection per exo-default batch runner, no "
           "Kafka, no Redis\n";
    std::cout << "inbox-peer: the hand-written inbox consumer (bench/inbox_peer/inbox_peer.js: "
                 "kafkajs eachBatch, 8 partitions at once, one transaction per fetched partition "
                 "batch, no Redis, no sequence checks)\n";
    std::cout << "exo-emits: exo-default with the ledger emitting each applied payment through "
                 "the outbox (the shipped default), the relay on; done when every emit is "
                 "published\n";
    std::cout << "exo-no-redis: exo-default with claim.store: postgres (no Redis)\n";
    std::cout << "exo-record-handler: exo-default with the per-record ledger "
                 "(ledger_per_record: one statement per payment)\n";
    std::cout << "exo-per-record-sql: exo-record-handler with pipeline.framework_sql: per_record "
                 "(the pipeline's statements before set-based batches)\n";
    std::cout << "postgres-bare-set: the bare PostgreSQL limit of exo-default's SQL shape: dedup "
                 "rows, sequences and the ledger set-based per transaction (the prototype's "
                 "statements), no savepoints, no Kafka, no Redis; the same as proto-set-all\n";
    std::cout << "postgres-bare-savepoints: postgres-bare plus the worker's SAVEPOINT round trip "
                 "per record\n";
    std::cout << "proto-set-*: PROTOTYPES of a set-based batch (bench/set_based_prototype.hpp), "
                 "not exo's code: proto-set-framework = dedup rows and sequences one statement per "
                 "batch, handler per record, no savepoints; proto-set-all = the ledger effects "
                 "set-based too\n";
    bool keyed = false;
    for (const auto& spec : kKeyedScenarios) keyed = keyed || o.wants(spec.name);
    if (keyed)
        std::cout << fmt::format(
            "keyed-*: {} records over {} Kafka keys (the producer's partitioner spreads them) on "
            "{} partitions; handler keyed_wait, key /eventId, no sequence, one statement per "
            "record after a {:.1f} ms wait (client: sleep_for in handle(); server: SELECT "
            "pg_sleep() in the transaction; outside: sleep_for in before_transaction(), before "
            "it); batch_size={}; -partition-c1: ordering partition, the default concurrency ({}); "
            "-partition: ordering partition, -key: ordering key, both at concurrency {} "
            "(outside: concurrency {}, pipeline.outside_threads {}){}\n",
            o.keyed_records, o.keyed_keys, o.keyed_partitions, o.keyed_wait_us / 1000.0,
            o.keyed_batch_size > 0 ? o.keyed_batch_size : p.batch_size, p.concurrency,
            o.keyed_concurrency, o.keyed_outside_concurrency, o.keyed_outside_threads,
            o.keyed_config.empty() ? "" : "; --keyed-config " + describe(o.keyed_config));
    std::cout << "memory: RSS read per scenario (VmHWM reset before each); allocator "
              << allocator_description() << "\n";
    std::cout << "records/s is measured from the first poll to the group's last offset commit "
                 "(group lag 0, checked every 20 ms once every record finished)"
              << std::endl;
}

}  // namespace
}  // namespace exo::bench

int main(int argc, char** argv) {
    using namespace exo::bench;
    std::optional<BenchOptions> options;
    try {
        options = parse_bench_options(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "exo_bench: " << e.what() << "\n";
        return 2;
    }
    if (!options) return 0;
    spdlog::set_level(spdlog::level::from_str(options->log_level));
    print_header(*options);

    Calibration calibration;
    try {
        calibration = calibrate(*options);
    } catch (const std::exception& e) {
        std::cerr << "exo_bench: cannot reach the servers: " << e.what() << "\n";
        return 2;
    }
    Bench bench(*options, calibration);
    try {
        bench.run_all();
    } catch (const std::exception& e) {
        std::cerr << "exo_bench: setup failed: " << e.what() << "\n";
        print_report(std::cout, *options, calibration, bench.results());
        return 2;
    }
    auto verdict = print_report(std::cout, *options, calibration, bench.results());
    if (!verdict.correct) {
        std::cout << "exo_bench: FAILED: a scenario did not complete or its exactly-once check "
                     "failed (see FAILURE lines above)\n";
        return 1;
    }
    return 0;
}
