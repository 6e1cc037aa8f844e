#pragma once
// The framework's own SQL inside a record's transaction (docs/design.md#two-fences
// and 4): the dedup row and the sequence check. Statements are prepared once
// per connection by prepare_framework_statements() and run by name.
// All functions throw pqxx exceptions (classify with classify_pg_error).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <pqxx/connection>
#include <pqxx/row>
#include <pqxx/transaction_base>

#include <exo/types.hpp>
#include "config/config.hpp"
#include "core/fencing_token.hpp"
#include "core/outcome.hpp"
#include "core/record_fingerprint.hpp"
#include "core/sequence_decision.hpp"

namespace exo {

// A record's transaction also needs the outbox writer's statement, which pg (below
// outbox) cannot prepare: prepare_record_connection (runtime/sessions/record_connection.hpp)
// prepares both, and is what a connection that runs records calls.
// It first registers this process (register_process, pg/process_identity.hpp:
// one statement outside a transaction, a write only on the process's first
// connection), whose id the dedup inserts write. Throws pqxx exceptions.
void prepare_framework_statements(pqxx::connection_base& connection);

struct ProcessedRow {
    std::string consumer_group;
    std::string idempotency_key;
    FencingToken token;
    TopicPartition partition;
    Offset offset;
    StoredOutcome outcome = StoredOutcome::applied;
    std::string result;
    std::string fingerprint;  // record_fingerprint() of this copy; empty: stored as NULL
};

struct ExistingRow {
    StoredOutcome outcome = StoredOutcome::applied;
    std::string result;
    // The copy the row was written for: its fingerprint (empty: NULL, a row
    // written before 0013) and coordinates, for key_reuse_verdict().
    AppliedCopy applied;
};

// Inserts the dedup row. Returns nullopt if it was inserted (the key is new to
// this group), or the row that was already there (a duplicate: do not run the
// handler). Two racing transactions serialize on the primary key: the loser
// blocks until the winner commits, then sees its row.
std::optional<ExistingRow> insert_processed(pqxx::transaction_base& tx, const ProcessedRow& row);

// The row read back for a duplicate key. Throws std::runtime_error for an
// outcome this exo does not know (a row written by a newer one).
ExistingRow existing_row_of(const std::string& key, const std::string& outcome_text,
                            std::string result, AppliedCopy applied = {});

// The AppliedCopy of a row read as (fingerprint, topic, kafka_partition,
// kafka_offset) starting at column `first`.
AppliedCopy applied_copy_of(const pqxx::row& row, pqxx::row::size_type first);

// Sets outcome and result of a row inserted earlier in this transaction.
void update_processed(pqxx::transaction_base& tx, const std::string& group, const std::string& key,
                      StoredOutcome outcome, const std::string& result);

struct SequenceStep {
    // exo_sequences.handler: the handler name, or for a binding with
    // `sequence.scope: group` its group-qualified form (sequence_owner(),
    // core/sequence_config.hpp). Owned: it is computed per binding and group.
    std::string handler;
    const std::string& entity;
    std::int64_t sequence;
    SequenceMode mode;
};

struct RecordStart {
    std::optional<ExistingRow> duplicate;  // set: the key was known, nothing was written
    // Set when a sequence was given and the key is new: apply, or stale/gap (then
    // the dedup row was written but the sequence did not move). nullopt with a
    // new key: a concurrent transaction moved the entity; retry the record.
    std::optional<SequenceVerdict> verdict;
};

// The framework's part of a record in ONE round trip: inserts the dedup row
// and, only if the key is new, advances the sequence by the mode's rule.
RecordStart start_record(pqxx::transaction_base& tx, const ProcessedRow& row,
                         const std::optional<SequenceStep>& sequence);

// Removes a dedup row written earlier in this transaction (a record whose
// sequence gap makes it wait: it was not applied).
void delete_processed(pqxx::transaction_base& tx, const std::string& group, const std::string& key);

// Strict sequences: records that `key` waits for a predecessor (first sighting
// kept) and returns how long ago, in server time, it was first seen waiting.
// Part of the caller's transaction: a rolled-back sighting never happened.
std::chrono::milliseconds record_gap(pqxx::transaction_base& tx, const std::string& group,
                                     const std::string& key);
// Forgets the sighting (the record was dead-lettered for its gap). Sightings
// left behind (records since applied) go with retention (pg/retention_statements.hpp).
void clear_gap(pqxx::transaction_base& tx, const std::string& group, const std::string& key);

}  // namespace exo
