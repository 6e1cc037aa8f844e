// pipeline and logging: how the process runs (workers, batches, retries, what
// to do while Redis is down) and how much it says.
#include "config/sections.hpp"

namespace exo::config_reading {

const Keys kPipelineKeys = {"workers",
                            "batch_size",
                            "linger_ms",
                            "claim_ahead",
                            "concurrency",
                            "outside_threads",
                            "max_in_flight",
                            "max_queued_per_partition",
                            "max_in_flight_bytes",
                            "max_queued_bytes_per_partition",
                            "max_headers_per_record",
                            "max_parked_per_partition",
                            "max_parked_bytes_per_partition",
                            "shutdown_timeout_ms",
                            "retry_backoff_initial_ms",
                            "retry_backoff_max_ms",
                            "on_redis_down",
                            "framework_sql"};
const Keys kLoggingKeys = {"level", "format"};

namespace {

// Each batch in flight holds a PostgreSQL connection: beyond a few hundred
// per worker the server's max_connections is the limit, not exo.
constexpr Bounds kConcurrency{1, 256};
// Threads that mostly wait on other services; a few thousand threads a process
// is where the stacks' memory starts to matter.
constexpr Bounds kOutsideThreads{1, 1024};
const Choices<RedisDownPolicy> kRedisDownPolicies = {
    {"pause", RedisDownPolicy::pause}, {"postgres_only", RedisDownPolicy::postgres_only}};
const Choices<std::string_view> kLogLevels = {
    {"trace", "trace"}, {"debug", "debug"},       {"info", "info"}, {"warn", "warn"},
    {"error", "error"}, {"critical", "critical"}, {"off", "off"}};
const Choices<LogFormat> kLogFormats = {{"text", LogFormat::text}, {"json", LogFormat::json}};

}  // namespace

PipelineConfig read_pipeline(const Reader& pipeline) {
    PipelineConfig out;
    pipeline.read("workers", out.workers, kPositive);
    pipeline.read("batch_size", out.batch_size, kPositive);
    pipeline.read("linger_ms", out.linger, kNonNegativeMs);
    pipeline.read("concurrency", out.concurrency, kConcurrency);
    pipeline.read("outside_threads", out.outside_threads, kOutsideThreads);
    pipeline.read("max_queued_per_partition", out.max_queued_per_partition, kPositive);
    pipeline.read("max_in_flight", out.max_in_flight, kPositive);
    pipeline.read("max_queued_bytes_per_partition", out.max_queued_bytes_per_partition,
                  kPositiveBytes);
    pipeline.read("max_in_flight_bytes", out.max_in_flight_bytes, kPositiveBytes);
    pipeline.read("max_headers_per_record", out.max_headers_per_record, kPositive);
    pipeline.read("max_parked_per_partition", out.max_parked_per_partition, kPositive);
    pipeline.read("max_parked_bytes_per_partition", out.max_parked_bytes_per_partition,
                  kPositiveBytes);
    // Known only to say what replaced it (issue 36): a second threading model
    // that measured no faster and excluded concurrency above 1.
    if (pipeline.has("claim_ahead"))
        pipeline.problem("claim_ahead",
                         "was removed: claims are made by each batch's own thread; use "
                         "pipeline.concurrency for parallelism, and remove the key");
    pipeline.read("shutdown_timeout_ms", out.shutdown_timeout, kPositiveMs);
    pipeline.read("retry_backoff_initial_ms", out.retry_backoff_initial, kPositiveMs);
    pipeline.read("retry_backoff_max_ms", out.retry_backoff_max, kPositiveMs);
    pipeline.read("on_redis_down", out.on_redis_down, kRedisDownPolicies);
    // Known only to say where it went (issue 36): the per-record statements are
    // the fallback exo takes by itself when a set-based try fails, and the
    // benchmark's comparison sets PipelineConfig::framework_sql in code.
    if (pipeline.has("framework_sql"))
        pipeline.problem("framework_sql",
                         "is no longer a setting: exo runs a transaction's framework statements "
                         "set-based and falls back to per-record statements by itself when a "
                         "record fails; remove the key");
    if (out.retry_backoff_max < out.retry_backoff_initial) {
        const std::string_view key = pipeline.has("retry_backoff_max_ms")
                                         ? "retry_backoff_max_ms"
                                         : "retry_backoff_initial_ms";
        pipeline.problem(
            key, "retry_backoff_max_ms (" + std::to_string(out.retry_backoff_max.count()) +
                     ") must be at least retry_backoff_initial_ms (" +
                     std::to_string(out.retry_backoff_initial.count()) + "): raise the maximum");
    }
    return out;
}

LoggingConfig read_logging(const Reader& logging) {
    LoggingConfig out;
    std::string_view level = out.level;
    logging.read("level", level, kLogLevels);
    out.level = std::string(level);
    logging.read("format", out.format, kLogFormats);
    return out;
}

}  // namespace exo::config_reading
