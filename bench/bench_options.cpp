#include "bench_options.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace exo::bench {
namespace {

constexpr const char* kUsage = R"(usage: exo_bench [options]
Runs the exo pipeline against an in-process mock Kafka cluster (or the real one of
--bootstrap) and the given Redis and PostgreSQL, next to the hand-written inbox consumer
(bench/inbox_peer) and the bare PostgreSQL limit; prints one line per figure (medians of
--runs), PASS/FAIL against the targets in docs/performance.md, and a Markdown summary table.

  --bootstrap HOST:PORT  a real Kafka cluster instead of the in-process mock (scripts/bench.sh
                         --kafka apache starts one); topics are created per run (unique
                         names) and deleted after it; consumers run with librdkafka's
                         defaults there (on the mock: session.timeout.ms 6000,
                         heartbeat.interval.ms 1000, fetch.wait.max.ms 20)
  --kafka-label TEXT     how the report names that cluster (default: its bootstrap)
  --broker-pid PID       the real broker's process: its CPU is reported per scenario
  --kafka-property K=V   a librdkafka consumer property for every consumer of the run (exo's
                         and the plain consumer's), over the defaults above (repeatable)
  --records N            messages in the main workload, duplicates included (200000)
  --accounts N           accounts (sequence entities) (10000)
  --partitions N         partitions of the benchmark topic (32)
  --duplicate-ratio R    share of messages that re-send an earlier event (0.1)
  --runs N               repetitions of every scenario; medians are reported (3)
  --baseline-records N   messages for the slow per-record baseline; 0: --records (20000)
  --postgres-uri URI     default $EXO_POSTGRES_URI
  --redis-host HOST      default $EXO_REDIS_HOST, else 127.0.0.1
  --redis-port PORT      default $EXO_REDIS_PORT, else 6379
  --only NAME[,NAME]     run only these scenarios (repeatable). By default: inbox-peer (the
                         hand-written inbox consumer in Node, bench/inbox_peer), exo-default,
                         exo-emits (the ledger emitting ledger.applied through the outbox, done
                         when the relay published every emit), exo-no-redis (claim.store:
                         postgres), postgres-bare-set, exo-paced (latency at half of
                         exo-default's rate). With --all also exo-record-handler,
                         exo-per-record-sql, per-record, postgres-bare. Only by name:
                         inbox-peer-paced (the peer at exo-paced's rate; see
                         docs/performance.md for what the mock cluster does to it),
                         steady (or exo-steady, plain-steady: one side only):
                         latency at each --steady-rates rate, exo (defaults) and a plain
                         librdkafka group consumer (subscribe + poll, no processing, the
                         same consumer properties), each alone (or --steady-together);
                         exo-flaky-named, exo-flaky-unnamed (0.5% of records fail once, named
                         by index or not); postgres-bare-savepoints, proto-set-framework,
                         proto-set-all (or --prototypes); (an --extra runs whatever --only says);
                         the per-key concurrency scenarios (or keyed for all nine):
                         keyed-{client,server,outside}-partition-c1 (ordering partition,
                         concurrency 1), keyed-{client,server,outside}-partition
                         (ordering partition) and keyed-{client,server,outside}-key
                         (ordering key), both at --keyed-concurrency (outside:
                         --keyed-outside-concurrency); client: the
                         handler sleeps in handle(), server: it runs SELECT pg_sleep()
                         (either in its transaction), outside: it sleeps in
                         before_transaction(), before its transaction
  --all                  also run the earlier designs exo is compared with (see --only)
  --prototypes           also run postgres-bare-savepoints and the proto-set-* scenarios:
                         what-if measurements for the report's proposals (not exo's code)
  --pg-costs             after the report, what each pipeline scenario and the inbox peer cost
                         PostgreSQL per record (docs/performance.md): WAL bytes (the insert
                         LSN, pg_stat_wal), rows and index entries per table, the statements
                         of pg_stat_statements (when the server preloads it: scripts/bench.sh
                         --pg-costs does), the postgres processes' CPU; and a Markdown table
                         exo-default vs inbox-peer
  --concurrency N        pipeline.concurrency of exo-default (default: the config default)
  --extra SPEC           another pipeline scenario, SPEC like concurrency=4,batch_size=200,
                         linger_ms=2,commit_interval_ms=200 (repeatable); observability=1
                         serves /metrics and scrapes it every second during the run; any
                         exo.yaml path sets that key (claim.store=postgres,
                         outbox.batch_size=1000), read by exo's own config parser
  --paced-seconds S      length of the latency runs (exo-paced, inbox-peer-paced) at 50% of
                         exo-default's max rate; 0 skips them (10)
  --paced-rate R         records/s of that run (default: half of exo-default's median)
  --latency-csv FILE     write the paced exo runs' per-event trace (scenario, run, seconds
                         after the first produce, produce->commit ms) to FILE
  --steady-rates R[,R]   records/s of the steady runs (5000,20000): exo-steady-R reports
                         produce -> handler start (in its transaction) and produce ->
                         PostgreSQL commit, plain-steady-R produce -> poll return
  --steady-seconds S     measured seconds of each steady run, after the warm-up (10)
  --steady-warm-up-s S   the producer's first seconds, produced but left out of the
                         steady runs' percentiles (2)
  --steady-config SPEC   exo-steady-R with these settings (an --extra SPEC) instead of
                         exo's defaults
  --steady-together      the steady runs' two consumers on one stream at once (default:
                         one after the other, each alone on a stream of the same records)
  --log-level LEVEL      the daemon's log level (warn)
  --timeout-s S          per scenario (300)
  --seed N               workload seed (42)
  --keyed-records N      records of the keyed scenarios' workload (10000)
  --keyed-keys N         its distinct Kafka record keys (1000)
  --keyed-partitions N   its partitions (4)
  --keyed-wait-ms MS     simulated I/O per record, may be fractional (5)
  --keyed-concurrency N  pipeline.concurrency of keyed-{client,server}-partition and
                         -key (64)
  --keyed-outside-concurrency N
                         pipeline.concurrency of keyed-outside-partition and -key (8)
  --keyed-outside-threads N
                         pipeline.outside_threads of keyed-outside-* (128)
  --keyed-batch-size N   pipeline.batch_size of the keyed scenarios; 0: the config
                         default (0: a batch takes a slot's share of what is ready)
  --keyed-config K=V     an exo.yaml path set in every keyed scenario, as in --extra
                         (pipeline.max_queued_per_partition=4000); repeatable
)";

int to_int(const std::string& flag, const std::string& v, int min) {
    std::size_t used = 0;
    int n = 0;
    try {
        n = std::stoi(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v.size() || n < min)
        throw std::invalid_argument(flag + " wants an integer >= " + std::to_string(min) +
                                    ", not '" + v + "'");
    return n;
}

double to_double(const std::string& flag, const std::string& v, double min, double max) {
    std::size_t used = 0;
    double d = 0;
    try {
        d = std::stod(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v.size() || d < min || d > max)
        throw std::invalid_argument(flag + " wants a number in [" + std::to_string(min) + ", " +
                                    std::to_string(max) + "], not '" + v + "'");
    return d;
}

// Splits at `sep` outside [...], so "exo[concurrency=4,batch_size=200]" stays whole.
std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string part;
    int depth = 0;
    for (char c : s) {
        if (c == '[') ++depth;
        if (c == ']' && depth > 0) --depth;
        if (c == sep && depth == 0) {
            if (!part.empty()) out.push_back(part);
            part.clear();
        } else {
            part += c;
        }
    }
    if (!part.empty()) out.push_back(part);
    return out;
}

PipelineOverrides parse_extra(const std::string& spec) {
    PipelineOverrides o;
    o.spec = spec;
    for (const auto& item : split(spec, ',')) {
        auto eq = item.find('=');
        if (eq == std::string::npos)
            throw std::invalid_argument("--extra: '" + item + "' is not name=value");
        auto name = item.substr(0, eq);
        auto value = item.substr(eq + 1);
        if (name == "concurrency")
            o.concurrency = to_int("--extra concurrency", value, 1);
        else if (name == "batch_size")
            o.batch_size = to_int("--extra batch_size", value, 1);
        else if (name == "linger_ms")
            o.linger_ms = to_int("--extra linger_ms", value, 0);
        else if (name == "commit_interval_ms")
            o.commit_interval_ms = to_int("--extra commit_interval_ms", value, 1);
        else if (name == "observability")
            o.observability = to_int("--extra observability", value, 0) != 0;
        else if (name.find('.') != std::string::npos || value == "~")  // "redis=~": no section
            o.config.push_back(parse_config_override(item));
        else
            throw std::invalid_argument(
                "--extra: unknown field '" + name +
                "' (concurrency, batch_size, linger_ms, commit_interval_ms, "
                "observability, or an exo.yaml path like claim.store)");
    }
    if (!o.concurrency && !o.batch_size && !o.linger_ms && !o.commit_interval_ms &&
        !o.observability && o.config.empty())
        throw std::invalid_argument("--extra wants at least one name=value");
    return o;
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

bool BenchOptions::wants(const std::string& scenario) const {
    auto in = [&scenario](const auto& names) {
        return std::find(std::begin(names), std::end(names), scenario) != std::end(names);
    };
    auto named = [this](const char* name) {
        return std::find(only.begin(), only.end(), name) != only.end();
    };
    // An --extra was asked for by name on the same command line: --only never drops it.
    if (scenario.rfind("exo[", 0) == 0) return true;
    if (!only.empty())
        return in(only) || (scenario.rfind("keyed-", 0) == 0 && named("keyed")) ||
               ((scenario == "exo-steady" || scenario == "plain-steady") && named("steady"));
    if (scenario.rfind("proto-", 0) == 0 || scenario == "postgres-bare-savepoints")
        return prototypes;
    return in(kDefaultScenarios) || (all && in(kAllScenarios));
}

std::optional<BenchOptions> parse_bench_options(int argc, char** argv) {
    BenchOptions o;
    o.postgres_uri = env_or("EXO_POSTGRES_URI", "");
    o.redis_host = env_or("EXO_REDIS_HOST", "127.0.0.1");
    o.redis_port = to_int("EXO_REDIS_PORT", env_or("EXO_REDIS_PORT", "6379"), 1);

    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            std::cout << kUsage;
            return std::nullopt;
        }
        if (flag == "--prototypes") {
            o.prototypes = true;
            continue;
        }
        if (flag == "--all") {
            o.all = true;
            continue;
        }
        if (flag == "--steady-together") {
            o.steady_together = true;
            continue;
        }
        if (flag == "--pg-costs") {
            o.pg_costs = true;
            continue;
        }
        if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value (see --help)");
        std::string v = argv[++i];
        if (flag == "--records")
            o.records = to_int(flag, v, 1);
        else if (flag == "--accounts")
            o.accounts = to_int(flag, v, 1);
        else if (flag == "--partitions")
            o.partitions = to_int(flag, v, 1);
        else if (flag == "--duplicate-ratio")
            o.duplicate_ratio = to_double(flag, v, 0, 0.9);
        else if (flag == "--runs")
            o.runs = to_int(flag, v, 1);
        else if (flag == "--baseline-records")
            o.baseline_records = to_int(flag, v, 0);
        else if (flag == "--postgres-uri")
            o.postgres_uri = v;
        else if (flag == "--redis-host")
            o.redis_host = v;
        else if (flag == "--redis-port")
            o.redis_port = to_int(flag, v, 1);
        else if (flag == "--only")
            for (auto& name : split(v, ',')) o.only.push_back(name);
        else if (flag == "--concurrency")
            o.concurrency = to_int(flag, v, 1);
        else if (flag == "--extra")
            o.extras.push_back(parse_extra(v));
        else if (flag == "--steady-config")
            o.steady_config = parse_extra(v);
        else if (flag == "--paced-seconds")
            o.paced_seconds = to_int(flag, v, 0);
        else if (flag == "--paced-rate")
            o.paced_rate = to_double(flag, v, 1, 1e7);
        else if (flag == "--latency-csv")
            o.latency_csv = v;
        else if (flag == "--bootstrap")
            o.bootstrap = v;
        else if (flag == "--kafka-label")
            o.kafka_label = v;
        else if (flag == "--broker-pid")
            o.broker_pid = to_int(flag, v, 0);
        else if (flag == "--kafka-property") {
            auto eq = v.find('=');
            if (eq == std::string::npos || eq == 0)
                throw std::invalid_argument("--kafka-property wants K=V, not '" + v + "'");
            o.kafka_properties.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else if (flag == "--steady-rates") {
            o.steady_rates.clear();
            for (auto& r : split(v, ',')) o.steady_rates.push_back(to_double(flag, r, 1, 1e7));
            if (o.steady_rates.empty()) throw std::invalid_argument("--steady-rates wants a rate");
        } else if (flag == "--steady-seconds")
            o.steady_seconds = to_int(flag, v, 1);
        else if (flag == "--steady-warm-up-s")
            o.steady_warm_up_s = to_double(flag, v, 0, 600);
        else if (flag == "--log-level")
            o.log_level = v;
        else if (flag == "--timeout-s")
            o.timeout = std::chrono::seconds(to_int(flag, v, 1));
        else if (flag == "--keyed-records")
            o.keyed_records = to_int(flag, v, 1);
        else if (flag == "--keyed-keys")
            o.keyed_keys = to_int(flag, v, 1);
        else if (flag == "--keyed-partitions")
            o.keyed_partitions = to_int(flag, v, 1);
        else if (flag == "--keyed-wait-ms")
            o.keyed_wait_us = static_cast<int>(to_double(flag, v, 0, 1000) * 1000);
        else if (flag == "--keyed-concurrency")
            o.keyed_concurrency = to_int(flag, v, 1);
        else if (flag == "--keyed-outside-concurrency")
            o.keyed_outside_concurrency = to_int(flag, v, 1);
        else if (flag == "--keyed-outside-threads")
            o.keyed_outside_threads = to_int(flag, v, 1);
        else if (flag == "--keyed-batch-size")
            o.keyed_batch_size = to_int(flag, v, 0);
        else if (flag == "--keyed-config")
            o.keyed_config.push_back(parse_config_override(v));
        else if (flag == "--seed")
            o.seed = static_cast<std::uint64_t>(to_int(flag, v, 0));
        else
            throw std::invalid_argument("unknown option " + flag + " (see --help)");
    }
    if (o.postgres_uri.empty())
        throw std::invalid_argument(
            "no PostgreSQL: pass --postgres-uri or set EXO_POSTGRES_URI (scripts/bench.sh "
            "starts throw-away services and sets it)");
    if (o.baseline_records == 0) o.baseline_records = o.records;
    return o;
}

}  // namespace exo::bench
