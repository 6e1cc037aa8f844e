#pragma once
// A later copy of a key that PostgreSQL answers with the key's dedup row: a
// plain duplicate, unless its payload differs from the applied copy's (issue 34
// part 2, core/record_fingerprint.hpp). Then the binding's on_key_reuse decides.
#include <spdlog/logger.h>

#include "metrics/pipeline_stats.hpp"
#include "pg/framework_statements.hpp"
#include "protocol/batch_record.hpp"

namespace exo {

// Finishes `record` (binding set) as Outcome::duplicate_postgres of `row`, or,
// when its fingerprint differs from the row's and on_key_reuse is dead_letter,
// makes it a dead letter WITHOUT a dedup row (the key has one: the applied
// copy's), its reason naming both fingerprints and the applied copy's
// coordinates. dead_letter and log count exo_key_reuse_total; log warns.
// Throws nothing but what spdlog throws.
void finish_postgres_duplicate(BatchRecord& record, ExistingRow row, PipelineStats& stats,
                               spdlog::logger& log);

}  // namespace exo
