#pragma once
// The framework's part of all the records of one transaction, set-based (docs/design.md
// section 4.1): what start_record() and the stale / gap statements of
// run_record_step() do for one record, done for every record of a transaction
// in two round trips instead of one or more per record. The optimistic pass
// runs it before the handlers; the careful pass keeps the per-record
// path, so every failure is still met record by record.
//
// Errors: pqxx exceptions (classify with classify_pg_error). A failure, or an
// answer with `contended` set, leaves the transaction to be rolled back; the
// caller then runs the records the careful way, where the per-record path decides
// each record as before.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/transaction_base>

#include <exo/types.hpp>
#include "core/fencing_token.hpp"
#include "pg/framework_statements.hpp"

namespace exo {

void prepare_record_start_statements(pqxx::connection_base& connection);

struct RecordToStart {
    const std::string&
        key;  // the idempotency key as stored; unique among the transaction's records
    FencingToken token;
    TopicPartition partition;
    Offset offset;
    std::optional<SequenceStep> sequence;
};

struct StartedRecord {
    std::optional<ExistingRow> duplicate;  // set: the key was known, nothing was written
    // Set iff the key is new: apply (run the handler), stale (its row now says
    // STALE) or gap (its row is gone and its sighting recorded).
    std::optional<SequenceVerdict> verdict;
    std::chrono::milliseconds gap_waited{0};  // gap: since its first sighting, server time
};

struct RecordsStart {
    std::vector<StartedRecord> records;  // one per RecordToStart, in the same order
    // Set: a concurrent transaction created this entity after it was read as
    // new, so the plan is void (the per-record path's ContentionError) and
    // `records` is empty. Nothing after the sequence write was run.
    std::optional<std::string> contended;
    int round_trips = 0;
};

// `records` in partition order (the order the per-record path runs them).
RecordsStart start_records(pqxx::transaction_base& tx, const std::string& consumer_group,
                           const std::vector<RecordToStart>& records);

// The careful pass's lock order (docs/design.md section 4.1): locks the
// existing exo_sequences rows of `steps`' entities FOR UPDATE, sorted and
// unique, as start_records does, before the per-record statements lock them one
// record at a time. Without it, two careful passes, or a careful pass and a
// set-based one, whose records name shared entities in crossing orders would
// deadlock. Entities that do not exist yet are not locked: their creation can
// still meet a crossing creation (a deadlock, which is contention: NACKed).
// Returns the round trips made (0 for fewer than two entities).
int lock_entities(pqxx::transaction_base& tx, const std::vector<SequenceStep>& steps);

// Stores the results handlers set for records whose dedup rows this
// transaction wrote: keys[n] gets results[n] (non-empty, storable text).
// One round trip.
void store_results(pqxx::transaction_base& tx, const std::string& consumer_group,
                   const std::vector<std::string>& keys, const std::vector<std::string>& results);

}  // namespace exo
