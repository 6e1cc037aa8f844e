// retention: how fast the pruner deletes expired rows (docs/design.md#retention).
#include "config/sections.hpp"

namespace exo::config_schema {

const Section<RetentionConfig>& retention_section() {
    using config_reading::kNonNegative;
    using config_reading::kPositiveMs;
    using R = RetentionConfig;
    static const Section<RetentionConfig> section(
        "retention",
        {
            // A chunk is one transaction: its row locks last as long as its delete.
            number(
                "chunk_rows", &R::chunk_rows, Bounds{100, 100000},
                R"md(the pruner (a service of the daemon, its own thread and session) deletes expired rows of every exo table this many per transaction, chunk after chunk while a table has any; 100–100000)md"),
            number(
                "max_rows_per_second", &R::max_rows_per_second, kNonNegative,
                R"md(cap on the rows it deletes per second over all tables, so a backlog never competes with the pipeline in a burst (docs/performance.md: 25,000 cost nothing measurable, 50,000 a quarter of the pipeline's rate); must exceed the rows the pipeline writes per second (dedup rows, plus outbox rows when handlers emit: raise it for a pipeline that emits at more than ~12,000 records/s), or `exo_retention_lag_seconds` grows; 0: no cap)md"),
            ms("interval_ms", &R::interval, kPositiveMs,
               R"md(how long it sleeps once every table is caught up)md"),
        });
    return section;
}

}  // namespace exo::config_schema
