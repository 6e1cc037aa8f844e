// retention: how fast the pruner deletes expired rows (docs/design.md section 4.2).
#include "config/sections.hpp"

namespace exo::config_reading {

const Keys kRetentionKeys = {"chunk_rows", "max_rows_per_second", "interval_ms"};

RetentionConfig read_retention(const Reader& retention) {
    RetentionConfig out;
    // A chunk is one transaction: its row locks last as long as its delete.
    retention.read("chunk_rows", out.chunk_rows, Bounds{100, 100000});
    retention.read("max_rows_per_second", out.max_rows_per_second, kNonNegative);
    retention.read("interval_ms", out.interval, kPositiveMs);
    return out;
}

}  // namespace exo::config_reading
