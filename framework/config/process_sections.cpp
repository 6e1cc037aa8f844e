// pipeline and logging: how the process runs (batch runners, batches, retries, what
// to do while Redis is down) and how much it says.
#include "config/sections.hpp"

namespace exo::config_reading {

const Choices<RedisDownPolicy> kRedisDownPolicies = {
    {"pause", RedisDownPolicy::pause}, {"postgres_only", RedisDownPolicy::postgres_only}};
const Choices<LogFormat> kLogFormats = {{"text", LogFormat::text}, {"json", LogFormat::json}};

}  // namespace exo::config_reading

namespace exo::config_schema {
namespace {

using config_reading::kNonNegativeMs;
using config_reading::kPositive;
using config_reading::kPositiveBytes;
using config_reading::kPositiveMs;
using P = PipelineConfig;

// Each batch in flight holds a PostgreSQL connection: beyond a thousand per
// process the server's max_connections is the limit, not exo.
constexpr Bounds kConcurrency{1, 1024};
// Threads that mostly wait on other services; a few thousand threads a process
// is where the stacks' memory starts to matter.
constexpr Bounds kOutsideThreads{1, 1024};

void validate_pipeline(const Reader& pipeline, PipelineConfig& out) {
    if (out.retry_backoff_max >= out.retry_backoff_initial) return;
    const std::string_view key =
        pipeline.has("retry_backoff_max_ms") ? "retry_backoff_max_ms" : "retry_backoff_initial_ms";
    pipeline.problem(key, "retry_backoff_max_ms (" + std::to_string(out.retry_backoff_max.count()) +
                              ") must be at least retry_backoff_initial_ms (" +
                              std::to_string(out.retry_backoff_initial.count()) +
                              "): raise the maximum");
}

const Choices<std::string_view> kLogLevels = {
    {"trace", "trace"}, {"debug", "debug"},       {"info", "info"}, {"warn", "warn"},
    {"error", "error"}, {"critical", "critical"}, {"off", "off"}};

}  // namespace

// The removed keys are known only to say what replaced them (issue 36):
// claim_ahead, a second threading model that measured no faster and excluded
// concurrency above 1; framework_sql, whose per-record statements are the
// fallback exo takes by itself when a set-based try fails (the benchmark's
// comparison sets PipelineConfig::framework_sql in code).
namespace {

std::vector<Key<PipelineConfig>> pipeline_keys() {
    return {
        removed<P>(
            "workers",
            "was removed: the process runs one pool of "
            "batch runners; pipeline.concurrency now "
            "counts the batches the whole process runs "
            "at once: set it to the old workers x "
            "concurrency (and outside_threads to the "
            "old workers x outside_threads), and "
            "remove the key",
            R"md(removed, refused naming its line: the process runs one pool of `pipeline.concurrency` batch runners fed by one lane scheduler, so no runner idles while another holds the busy partitions; set `pipeline.concurrency` to the old `workers` × `concurrency` (and `outside_threads` to the old `workers` × `outside_threads`))md"),
        number(
            "batch_size", &P::batch_size, kPositive,
            R"md(records a batch runner takes at once, at most: one claim call and, when nothing fails, one transaction. A runner takes what is ready up to this cap (and, while several runners wait, about its share of what is ready), so a backlog runs in full batches (few round trips and commits per record) and a trickle in small ones after `linger_ms`. Lower it for handlers that hold row locks other consumers need (a transaction holds its rows' locks until it commits))md"),
        ms("linger_ms", &P::linger, kNonNegativeMs,
           R"md(how long a batch runner waits for a batch to fill, counted from when the longest-waiting ready record was polled (records that waited while the runners ran their last batches go at once); 0: take what is there)md"),
        removed<P>(
            "claim_ahead",
            "was removed: claims are made by each "
            "batch's own thread; use "
            "pipeline.concurrency for parallelism, "
            "and remove the key",
            R"md(removed, refused naming its line: claims are made by each batch's own thread; use `pipeline.concurrency` for parallelism (it measured no faster: docs/performance.md, "Claiming ahead"))md"),
        number(
            "concurrency", &P::concurrency, kConcurrency,
            R"md(batches the whole process runs at once (1 to 1024): its batch runners, each on its own thread with its own PostgreSQL connection, Redis connection, handler instances and dead-letter producer, all fed by one lane scheduler (one thread and Redis connection renew every batch's claims). With `ordering: key` or `entity` a partition's keys run concurrently; with `ordering: partition` only different partitions do. Connections: `concurrency` to PostgreSQL (mind its `max_connections`), as many plus one to Redis. Replaces `workers` × `concurrency` of earlier versions (docs/design.md#ordering-and-concurrency))md")
            .default_plus("; 16 when a binding has `ordering: "
                          "key` or `entity`"),
        number(
            "outside_threads", &P::outside_threads, kOutsideThreads,
            R"md(threads of the process, shared by every batch runner, that run handlers' `before_transaction()` (exo/outside_transaction.hpp): with each running batch's own thread, how many records' calls to other services the process waits on at once. A batch's records run it lane by lane (a lane's records one after another, different lanes at once), before the batch's transaction begins. Started only when a bound handler has such work (1 to 1024; docs/handlers.md, "Work outside the transaction"; docs/design.md#work-outside-the-transaction))md"),
        number(
            "max_in_flight", &P::max_in_flight, kPositive,
            R"md(records over the whole process, a memory guard: every partition is paused at it, resumed at half (`max_queued_per_partition` is the same for one partition). Keep it above partitions × `max_queued_per_partition` in normal use: at 10,000 it cost the 32-partition benchmark a sixth of its rate (the queues run low between pause and resume))md"),
        number(
            "max_queued_per_partition", &P::max_queued_per_partition, kPositive,
            R"md(records of a partition waiting or in a batch (parked ones left out, and those queued behind a held key) at which it is paused; resumed at half. A held key (`ordering: key` or `entity`) keeps at most half of it queued; its later records are kept as offsets only and read again from Kafka once it is free, and the partition is paused after all when its held keys kept 100 times this many (docs/design.md#ordering-and-concurrency))md"),
        bytes(
            "max_in_flight_bytes", &P::max_in_flight_bytes, kPositiveBytes,
            R"md(the same as `max_queued_bytes_per_partition` over the whole process: every partition is paused at it, resumed when both it and `max_in_flight` are at half)md"),
        bytes(
            "max_queued_bytes_per_partition", &P::max_queued_bytes_per_partition, kPositiveBytes,
            R"md(bytes of a partition's records waiting or in a batch (the same records `max_queued_per_partition` counts) at which it is paused; resumed at half. A record counts its key, value, header names and values, 72 bytes per header and 1 KiB per record, so a flood of empty headers counts. A record larger than this on its own still goes through: the pause stops fetching, not what is queued. Whole number of bytes, 1 to 1 TiB)md"),
        number(
            "max_headers_per_record", &P::max_headers_per_record, kPositive,
            R"md(headers a record may have (Kafka sets no limit, and each header costs its name, its value and 72 bytes in memory). A record with more is dead-lettered at once with a reason naming its header count and Kafka key. Its handler never runs, its headers are dropped from memory when it is polled, and its dead letter carries none of them, only `exo-headers-omitted: <count>`. No dedup row is written, so a redelivery is dead-lettered again)md"),
        number(
            "max_parked_per_partition", &P::max_parked_per_partition, kPositive,
            R"md(records of a partition parked on a strict-sequence gap (waiting for a predecessor, or back in a batch to try again). Parked records are left out of the pause bounds, because pausing for them could keep out the predecessor they wait for, so this bounds them instead. At the bound, a record meeting a *new* gap is dead-lettered at once, without a dedup row (as a gap timeout: `exo dlq list` shows `NO_DEDUP_ROW`, and `exo dlq replay` applies it exactly once after the gap is filled), with a reason naming the partition and this key. Records already parked keep their place; a record sent back to its queue (a NACK, a failed batch) gives its place up. At least 1)md"),
        bytes(
            "max_parked_bytes_per_partition", &P::max_parked_bytes_per_partition, kPositiveBytes,
            R"md(the same in bytes, counted as `max_queued_bytes_per_partition` counts them; may be exceeded by one record. Whole number of bytes, at least 1)md"),
        ms("shutdown_timeout_ms", &P::shutdown_timeout, kPositiveMs,
           R"md(drain deadline on SIGTERM and on revoke)md"),
        ms("retry_backoff_initial_ms", &P::retry_backoff_initial, kPositiveMs,
           R"md(exponential backoff (with jitter) for NACKs, retries and reconnects starts here, and doubles up to `retry_backoff_max_ms`; a strict-sequence gap parks without jitter for half of it, doubling with each park up to 1 s while the gap is younger than 4 s; from then on for a quarter of its age in powers of two seconds (4-8 s old: 1 s, 8-16 s: 2 s, ...), up to a quarter of the binding's `gap_timeout_ms` (kept between 1 s and 30 s), never past the gap timeout: with the defaults a record waiting out a 60 s gap is tried 25 times (24 parks), and a gap filled after t seconds is noticed at most t/4 later)md"),
        ms("retry_backoff_max_ms", &P::retry_backoff_max, kPositiveMs,
           R"md(the longest backoff (with jitter) for NACKs, retries and reconnects; at least `retry_backoff_initial_ms`)md"),
        choice(
            "on_redis_down", &P::on_redis_down, config_reading::kRedisDownPolicies,
            R"md(what the batch runners do while Redis is down (docs/design.md#the-matrix); refused with `claim.store: postgres`)md")
            .printed_if([](const Config& c, const P&) { return c.claim.in_redis(); }),
        removed<P>(
            "framework_sql",
            "is no longer a setting: exo runs a "
            "transaction's framework statements "
            "set-based and falls back to per-record "
            "statements by itself when a "
            "record fails; remove the key",
            R"md(no longer a setting, refused naming its line: a transaction's framework statements run set-based, and exo falls back to per-record statements by itself when a record fails (the benchmark's per-record comparison sets it in code))md"),
    };
}

}  // namespace

const Section<PipelineConfig>& pipeline_section() {
    static const Section<PipelineConfig> section("pipeline", pipeline_keys(), validate_pipeline);
    return section;
}

const Section<LoggingConfig>& logging_section() {
    static const Section<LoggingConfig> section(
        "logging",
        {
            one_of("level", &LoggingConfig::level, kLogLevels, ""),
            choice(
                "format", &LoggingConfig::format, config_reading::kLogFormats,
                R"md(`text`: `[time] [logger] [level] message`, plus ` [topic[partition]@offset key=...]` when the line concerns a record; `json`: one JSON object per line with `time` (RFC 3339, UTC, ms), `level`, `logger` (`exo`, `kafka`, `runners`, `leases`, ...), `message` and, for a record, `topic`, `partition`, `offset`, `key`. Invalid UTF-8 shows as U+FFFD and control characters are escaped: a line never breaks in two)md"),
        });
    return section;
}

}  // namespace exo::config_schema
