#include "protocol/passes/careful_pass.hpp"

#include <exo/errors.hpp>
#include "core/key_derivation.hpp"
#include "pg/pg_errors.hpp"
#include "pg/record_start.hpp"
#include "protocol/passes/entity_holds.hpp"

namespace exo {
namespace {

// Issued before each record; the release of the previous record's savepoint
// rides in the same round trip. The last one is released before COMMIT, which
// is where a swallowed error of the last record's handler shows.
constexpr const char* kFirstSavepoint = "SAVEPOINT exo_record";
constexpr const char* kNextSavepoint = "RELEASE SAVEPOINT exo_record; SAVEPOINT exo_record";
constexpr const char* kReleaseSavepoint = "RELEASE SAVEPOINT exo_record";

// Locks the records' existing entities first, sorted, as the set-based start
// does, skipping those another transaction holds: per-record statements then
// wait for no entity row that existed here, and never lock two in an order
// that crosses another transaction's. A record whose entity is held is NACKed
// at once, with the records of its lane behind it, instead of waiting
// lock_timeout (for the whole transaction) and then failing alone.
void lock_entities_of(const PassContext& ctx, pqxx::transaction_base& tx, Batch& batch,
                      const TransactionRecords& records) {
    std::vector<SequenceValue> values;
    std::vector<SequenceStep> steps;
    std::vector<BatchRecord*> stepped;  // steps[n] is stepped[n]'s
    values.reserve(records.size());     // never reallocates: the steps refer into it
    for (auto* record : records) {
        if (!record->is_pending() || !record->binding->sequence) continue;
        try {
            values.push_back(extract_sequence(*record->binding->sequence, record->payload));
        } catch (const PermanentError&) {
            continue;  // its own step dead-letters it
        }
        const auto& binding = *record->binding;
        steps.push_back({sequence_owner(binding.handler, binding.sequence->scope, ctx.group),
                         values.back().entity, values.back().sequence, binding.sequence->mode});
        stepped.push_back(record);
    }
    // A failure here is nobody's record's: it fails the batch (a lock timeout
    // as contention, uncounted). It waits for no entity row, only for what
    // any statement may wait for (a table lock).
    const auto locks = lock_entities(tx, steps);
    ctx.stats.postgres_round_trips += static_cast<std::uint64_t>(locks.round_trips);
    std::vector<HeldRecord> held;
    for (std::size_t n = 0; n < steps.size(); ++n)
        if (locks.held.contains(EntityId{steps[n].handler, steps[n].entity}))
            held.push_back({stepped[n], entity_held_reason(steps[n])});
    for (const auto& nacked : put_back_held(batch, std::move(held)))
        ctx.fate.record_failed(batch, *nacked.record, nacked.failure, nacked.why);
}

// The savepoint statement before a record (or after the last), blaming
// `previous` if its handler left the transaction aborted (25P02).
void savepoint(const PassContext& ctx, pqxx::transaction_base& tx, Batch& batch,
               const char* statement, BatchRecord* previous) {
    ctx.stats.postgres_round_trips++;
    try {
        tx.exec(statement);
        return;
    } catch (const std::exception& e) {
        // 25P02: the transaction was already aborted when this statement came.
        // Every statement of the previous record succeeded, as far as exo saw,
        // so its handler ran one that failed and swallowed the error.
        if (previous == nullptr || !previous->handler_ran || !is_aborted_transaction(e)) throw;
    }
    tx.exec(kRollbackRecord);  // to the previous record's savepoint: it is still open
    ctx.stats.postgres_round_trips++;
    previous->reset_to_pending();
    ctx.fate.record_failed(batch, *previous, Failure::aborted_transaction,
                           swallowed_error_reason(previous->binding->handler));
    if (statement != kReleaseSavepoint) tx.exec(statement);
}

}  // namespace

PassResult run_careful_pass(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                            const TransactionRecords& records) {
    ExplicitTransaction transaction(connection);
    auto& tx = transaction.statements();
    // Each record's emits in its savepoint: a record rolled back takes its rows along.
    TransactionOutbox outbox(tx, ctx.group, TransactionOutbox::Write::per_record);
    lock_entities_of(ctx, tx, batch, records);
    BatchRecord* previous = nullptr;  // the record whose savepoint is open
    for (auto* record : records) {
        if (!record->is_pending()) continue;  // decided already, or held behind a record
        savepoint(ctx, tx, batch, previous ? kNextSavepoint : kFirstSavepoint, previous);
        previous = record;
        if (!record->is_pending()) continue;  // held behind the record just blamed
        if (auto failed = run_record(ctx, tx, *record, GapUndo::rollback_to_savepoint, outbox)) {
            tx.exec(kRollbackRecord);
            ctx.stats.postgres_round_trips++;
            ctx.fate.record_failed(batch, *record, failed->failure, failed->why);
        }
    }
    // The last record's handler may have left the transaction aborted too.
    if (previous) savepoint(ctx, tx, batch, kReleaseSavepoint, previous);
    return commit_records(ctx, transaction, records, outbox);
}

}  // namespace exo
