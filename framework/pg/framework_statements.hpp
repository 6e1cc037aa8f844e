#pragma once
// The framework's own SQL inside a record's transaction (DESIGN.md sections 2
// and 4): the dedup row and the sequence check. Statements are prepared once
// per connection by prepare_framework_statements() and run by name.
// All functions throw pqxx exceptions (classify with classify_pg_error).
#include <cstdint>
#include <optional>
#include <string>

#include <pqxx/connection>
#include <pqxx/transaction_base>

#include "config/config.hpp"
#include "core/sequence_decision.hpp"
#include "core/types.hpp"

namespace exo {

void prepare_framework_statements(pqxx::connection_base& connection);

enum class ProcessedOutcome { applied, stale, dead_lettered };
const char* to_sql(ProcessedOutcome o);

struct ProcessedRow {
    std::string consumer_group;
    std::string idempotency_key;
    FencingToken token;
    TopicPartition partition;
    Offset offset;
    ProcessedOutcome outcome = ProcessedOutcome::applied;
    std::string result;
};

struct ExistingRow {
    std::string outcome;  // APPLIED, STALE or DEAD_LETTERED
    std::string result;
};

// Inserts the dedup row. Returns nullopt if it was inserted (the key is new to
// this group), or the row that was already there (a duplicate: do not run the
// handler). Two racing transactions serialize on the primary key: the loser
// blocks until the winner commits, then sees its row.
std::optional<ExistingRow> insert_processed(pqxx::transaction_base& tx, const ProcessedRow& row);

// Sets outcome and result of a row inserted earlier in this transaction.
void update_processed(pqxx::transaction_base& tx, const std::string& group, const std::string& key,
                      ProcessedOutcome outcome, const std::string& result);

// Advances (handler, entity) to `sequence` if the mode allows it, atomically.
// Returns the verdict; nullopt when a concurrent transaction moved the entity
// between the read and the write: retry the record.
std::optional<SequenceVerdict> advance_sequence(pqxx::transaction_base& tx, SequenceMode mode,
                                                const std::string& handler,
                                                const std::string& entity, std::int64_t sequence);

// Deletes dedup rows older than the retention, at most `limit` per call.
// Returns the number deleted.
std::size_t prune_processed(pqxx::transaction_base& tx, std::chrono::hours retention, int limit);

}  // namespace exo
