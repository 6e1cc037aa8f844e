#include "pipeline/pipeline_stats.hpp"

#include <fmt/format.h>

namespace exo {

std::string PipelineStats::summary() const {
    return fmt::format(
        "polled={} applied={} duplicates={} (redis={} postgres={}) stale={} conflicts={} "
        "retries={} dead_lettered={} lost_completions={} batches={} batch_failures={}",
        polled.load(), applied.load(), duplicates_redis + duplicates_postgres,
        duplicates_redis.load(), duplicates_postgres.load(), stale.load(), conflicts.load(),
        retries.load(), dead_lettered.load(), lost_completions.load(), batches.load(),
        batch_failures.load());
}

}  // namespace exo
