#pragma once
// The framework's part of all the records of one transaction, set-based (
// docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based): what start_record() and
// the stale / gap statements of run_record_in_transaction() do for one record, done for every
// record of a transaction in two round trips instead of one or more per record. The optimistic pass
// runs it before the handlers; the careful pass keeps the per-record path, so every failure is
// still met record by record.
//
// Entity rows are locked FOR UPDATE SKIP LOCKED, never waited for: an entity
// another transaction holds leaves out its records (and, by the caller's
// answer, the records that must wait behind them) while the others go on in
// the same transaction.
//
// Errors: pqxx exceptions (classify with classify_pg_error). A failure, or an
// answer with `contended` set, leaves the transaction to be rolled back; the
// caller then runs the records the careful way, where the per-record path decides
// each record as before.
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <pqxx/transaction_base>

#include <exo/types.hpp>
#include "core/fencing_token.hpp"
#include "pg/framework_statements.hpp"

namespace exo {

// Prepared by prepare_framework_statements; `process` is the id its dedup rows
// name (register_process, pg/process_identity.hpp), as SQL text.
void prepare_record_start_statements(pqxx::connection_base& connection, const std::string& process);

struct RecordToStart {
    const std::string&
        key;  // the idempotency key as stored; unique among the transaction's records
    FencingToken token;
    TopicPartition partition;
    Offset offset;
    std::optional<SequenceStep> sequence;
    std::string fingerprint;  // record_fingerprint() of this copy; empty: stored as NULL
};

struct StartedRecord {
    // Left out (the caller's answer to LeaveOut): nothing of it stays written,
    // and neither `duplicate` nor `verdict` is set.
    bool left_out = false;
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

// The caller's answer when entities are held: `held` are the records (indices
// into the records given to start_records, ascending, never empty) whose
// entity row another transaction has locked. It returns one flag per record,
// true for every record it puts back: each held one, and the records that must
// not run before them (the later records of their ordering lanes).
using LeaveOut = std::function<std::vector<bool>(const std::vector<std::size_t>& held)>;

// `records` in partition order (the order the per-record path runs them).
// `leave_out` is called at most once, after the first round trip, and only
// when an entity is held; the records it leaves out get no dedup row and move
// no sequence. Throws std::logic_error if its answer is not one flag per
// record, or keeps a held record in.
RecordsStart start_records(pqxx::transaction_base& tx, const std::string& consumer_group,
                           const std::vector<RecordToStart>& records, const LeaveOut& leave_out);

using EntityId = std::pair<std::string, std::string>;  // (handler, entity)

struct EntityLocks {
    std::set<EntityId> held;  // exist, and another transaction holds them locked
    int round_trips = 0;
};

// The careful pass's lock (docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based):
// locks the existing exo_sequences rows of `steps`' entities FOR UPDATE SKIP LOCKED, sorted and
// unique, as start_records does, before the per-record statements lock them one
// record at a time, and answers which of them another transaction holds
// (their records are the caller's to put back) without waiting for any. The
// per-record statements then wait for no entity row that existed here, and
// never lock two in an order that crosses another transaction's. Entities that
// do not exist yet are neither locked nor held: their creation can still wait
// for a concurrent creation of the same entity (lock_timeout, then 55P03) or
// meet a crossing one (a deadlock); both are contention, NACKed.
// One round trip, none without entities.
EntityLocks lock_entities(pqxx::transaction_base& tx, const std::vector<SequenceStep>& steps);

// Stores the results handlers set for records whose dedup rows this
// transaction wrote: keys[n] gets results[n] (non-empty, storable text).
// One round trip.
void store_results(pqxx::transaction_base& tx, const std::string& consumer_group,
                   const std::vector<std::string>& keys, const std::vector<std::string>& results);

}  // namespace exo
