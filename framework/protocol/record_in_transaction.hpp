#pragma once
// One record's part of a pass of its transaction (docs/design.md#transaction):
// the dedup row, the sequence check and the handler, in the caller's transaction.
// The passes run it for every record of a batch; the handler test kit
// (exo/testing.hpp) runs the very same function, so a handler's unit tests see the
// daemon's behaviour, not a copy of it.
//
// Errors: whatever the handler or PostgreSQL throws propagates, and the caller
// rolls the record back and asks the failure matrix (failure_matrix.hpp) what
// it means. Two more are thrown here: ContentionError when a concurrent
// transaction created the record's sequence entity first, and PermanentError
// when the handler set a result PostgreSQL cannot store.
#include <any>
#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include <pqxx/transaction_base>

#include <exo/handler.hpp>
#include "config/config.hpp"
#include "core/fencing_token.hpp"
#include "core/key_derivation.hpp"
#include "core/outcome.hpp"
#include "core/record_fingerprint.hpp"
#include "outbox/transaction_outbox.hpp"

namespace exo {

struct RecordRunInput {
    const BindingConfig& binding;
    const std::string& consumer_group;  // kafka.group_id
    const Record& record;
    const std::string& key;  // the idempotency key as stored
    JsonPayload& payload;
    // Read by the caller before anything is written (a bad sequence field is the
    // record's fault alone and needs no rollback); set iff binding.sequence is.
    const std::optional<SequenceValue>& sequence;
    FencingToken token;  // the Redis claim's; 0 when Redis did not answer
    Handler& handler;
    spdlog::logger& log;
    int attempt = 1;  // HandlerContext::attempt()
    // HandlerContext::rerun(): whether handle() ran for this record earlier in
    // this batch. Set to true just before handle() is called (so also when it
    // throws); a record decided before its handler leaves it as it was.
    bool& handler_ran;
    std::chrono::microseconds* handler_took = nullptr;  // set: how long handle() took
    // HandlerContext: outbox.emit_limits; nullptr: librdkafka's defaults (the handler test kit).
    const EmitLimits* emit_limits = nullptr;
    // HandlerContext::trace(): the delivery's (PendingRecord::trace); nullptr: the
    // context starts one from the record (the handler test kit).
    const TraceContext* trace = nullptr;
    // Where the handler's emits go: gathered for one statement at COMMIT, or
    // written after the handler (TransactionOutbox). nullptr: written after the
    // handler (the handler test kit).
    TransactionOutbox* outbox = nullptr;
    // What the record's before_transaction() (exo/outside_transaction.hpp)
    // handed over (HandlerContext::handed_over(); nullptr: nothing), or threw:
    // rethrown where handle() would be called, which then is not.
    const std::any* handed_over = nullptr;
    std::exception_ptr outside_failure = nullptr;
    // record_fingerprint() of the record, written with its dedup row; nullptr:
    // none (NULL, the handler test kit).
    const std::string* fingerprint = nullptr;
};

// How a strict sequence gap takes back the record's dedup row: inside a
// savepoint by rolling back to it (no statement of the record stays), else by
// deleting the row.
enum class GapUndo { delete_row, rollback_to_savepoint };

struct RecordRunResult {
    // applied, duplicate_postgres or stale; nullopt: a strict sequence gap.
    std::optional<Outcome> outcome;
    StoredOutcome stored = StoredOutcome::applied;  // duplicate: what the key's row says
    std::string result;   // applied: the handler's result; duplicate: the stored one
    AppliedCopy applied;  // duplicate: the fingerprint and coordinates the key's row holds
    // Gap: nothing of the record stays but its first sighting. Empty while it
    // may still wait; else it waited past gap_timeout and this is why it is a
    // dead letter.
    std::string gap_expired;
    std::chrono::milliseconds gap_waited{0};  // gap: since its first sighting, server time
    int round_trips = 0;                      // PostgreSQL round trips this step made (statistics)
};

RecordRunResult run_record_in_transaction(pqxx::transaction_base& tx, const RecordRunInput& in,
                                          GapUndo undo);

// The handler's part alone, for a record whose dedup row and sequence the
// set-based start of its transaction's records already wrote (pg/record_start.hpp); what
// run_record_in_transaction does after its start. Errors as run_record_in_transaction.
RecordRunResult run_handler_in_transaction(pqxx::transaction_base& tx, const RecordRunInput& in);

// Why a strict-sequence gap that waited `waited` since its first sighting is a
// dead letter now; empty while it may still wait. `binding.sequence` must be set.
std::string gap_expiry(const BindingConfig& binding, const std::string& entity,
                       std::int64_t sequence, std::chrono::milliseconds waited);

// The statement that rolls one record back inside the careful pass's
// transaction (the savepoint every record runs in).
inline constexpr const char* kRollbackRecord = "ROLLBACK TO SAVEPOINT exo_record";

}  // namespace exo
