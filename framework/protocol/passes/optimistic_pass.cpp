#include "protocol/passes/optimistic_pass.hpp"

#include <exo/errors.hpp>
#include "core/key_derivation.hpp"
#include "pg/record_start.hpp"
#include "protocol/passes/batch_handler_call.hpp"
#include "protocol/passes/entity_holds.hpp"
#include "protocol/passes/key_reuse.hpp"

namespace exo {
namespace {

// The framework's SQL for every pending record at once: duplicates, stale
// records and gaps get their fate, records to apply are marked
// framework_started. A record whose entity another transaction holds is put
// back with the records of its lane behind it, and goes into `entity_held` for
// the caller to NACK; the others go on without them. Returns why the pass must
// roll back (it failed, or a concurrent transaction created an entity of the
// records), or nothing.
std::optional<std::string> start_set_based(const PassContext& ctx, pqxx::transaction_base& tx,
                                           Batch& batch, const TransactionRecords& records,
                                           std::vector<NamedFailure>& entity_held) {
    std::vector<BatchRecord*> started;  // starting[n] is started[n]
    std::vector<RecordToStart> starting;
    std::vector<SequenceValue> values;  // the entities starting[n].sequence refers to
    values.reserve(records.size());     // never reallocates: the references stay valid
    for (auto* record : records) {
        if (!record->is_pending()) continue;
        const auto& binding = *record->binding;
        std::optional<SequenceStep> step;
        if (binding.sequence) {
            // Read before anything is written, as on the per-record path.
            try {
                values.push_back(extract_sequence(*binding.sequence, record->payload));
            } catch (const PermanentError& e) {
                record->dead_letter(e.what());
                continue;
            }
            step.emplace(
                SequenceStep{sequence_owner(binding.handler, binding.sequence->scope, ctx.group),
                             values.back().entity, values.back().sequence, binding.sequence->mode});
        }
        started.push_back(record);
        starting.push_back({record->key, record->token.value_or(FencingToken{0}),
                            record->partition(), record->pending.record.offset, step,
                            record->fingerprint});
    }
    // One record: the per-record start is one round trip, the set-based start two.
    if (starting.size() < 2) return std::nullopt;
    // Put back now, uncounted, so that the records of their lanes go too;
    // NACKed by the caller once, whether this pass commits or not.
    const auto leave_out = [&](const std::vector<std::size_t>& held) {
        std::vector<HeldRecord> put_back;
        for (auto n : held)
            put_back.push_back({started[n], entity_held_reason(*starting[n].sequence)});
        for (auto& nacked : put_back_held(batch, std::move(put_back)))
            entity_held.push_back(std::move(nacked));
        std::vector<bool> out(started.size());
        for (std::size_t n = 0; n < started.size(); ++n) out[n] = !started[n]->is_pending();
        return out;
    };
    RecordsStart start;
    try {
        start = start_records(tx, ctx.group, starting, leave_out);
    } catch (...) {
        // The careful pass meets it record by record.
        return failure_of(std::current_exception()).why;
    }
    ctx.stats.postgres_round_trips += static_cast<std::uint64_t>(start.round_trips);
    ctx.stats.set_based_transactions++;
    if (start.contended)  // the per-record path's ContentionError: the careful pass NACKs it
        return "sequence of " + *start.contended + " moved concurrently";
    for (std::size_t n = 0; n < starting.size(); ++n) {
        auto& record = *started[n];
        auto& decided = start.records[n];
        if (decided.left_out) continue;  // put back above
        if (decided.duplicate) {
            finish_postgres_duplicate(record, std::move(*decided.duplicate), ctx.stats, ctx.log);
            continue;
        }
        switch (*decided.verdict) {
            case SequenceVerdict::apply:
                record.note_framework_started();  // only its handler is left to run
                break;
            case SequenceVerdict::stale:
                record.finish(Outcome::stale);
                break;
            case SequenceVerdict::gap: {
                const auto& seq = *starting[n].sequence;
                auto expired =
                    gap_expiry(*record.binding, seq.entity, seq.sequence, decided.gap_waited);
                if (!expired.empty())
                    record.dead_letter(std::move(expired), /*record_key=*/false,
                                       /*clears_gap=*/true);
                else
                    ctx.fate.park_for_gap(record, seq.entity, record.binding->sequence->gap_timeout,
                                          decided.gap_waited);
                break;
            }
        }
    }
    return std::nullopt;
}

// The pass; `entity_held` gets the records the set-based start put back,
// whichever way it ends.
PassResult run_pass(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                    const TransactionRecords& records, std::vector<NamedFailure>& entity_held) {
    ExplicitTransaction transaction(connection);
    auto& tx = transaction.statements();
    // The records commit or roll back together: their emits go in one statement at COMMIT.
    TransactionOutbox outbox(tx, ctx.group, TransactionOutbox::Write::at_commit);
    if (ctx.framework_sql == FrameworkSql::set_based)
        if (auto why = start_set_based(ctx, tx, batch, records, entity_held))
            return roll_back(transaction, ctx.stats, std::move(*why));
    // Records still to apply whose before_transaction() threw fail now, all at
    // once, before any handler runs; the others run again without them. (A
    // record the start found a duplicate or stale ends as that instead.)
    std::vector<NamedFailure> outside_failed;
    for (auto* record : records)
        if (record->is_pending() && record->framework_started() && record->outside_failure) {
            auto failed = failure_of(record->outside_failure, record->binding->handler);
            outside_failed.push_back({record, failed.failure, std::move(failed.why)});
        }
    if (!outside_failed.empty()) {
        auto result = roll_back(transaction, ctx.stats, outside_failed.front().why);
        result.outside_failed = std::move(outside_failed);
        return result;
    }
    // Consecutive records of one batch handler's binding make a run, one
    // handle_batch() call each. Handlers see records in the order of the
    // transaction's records, the order their sequences were decided in.
    Run run;
    const auto call_run = [&] {
        auto ran = RunResult::ran();
        if (!run.empty())
            ran = call_batch_handler(ctx, tx, *ctx.handlers.batch_handler(*run.front()->binding),
                                     run, outbox);
        run.clear();
        return ran;
    };
    for (auto* record : records) {
        if (!record->is_pending()) continue;  // decided already, or held behind a record
        if (record->framework_started() && ctx.handlers.batch_handler(*record->binding)) {
            if (!run.empty() && run.front()->binding != record->binding)
                if (auto ran = call_run(); !ran.applied)
                    return roll_back(transaction, ctx.stats, ran.why, std::move(ran.named));
            run.push_back(record);
            continue;
        }
        if (auto ran = call_run(); !ran.applied)
            return roll_back(transaction, ctx.stats, ran.why, std::move(ran.named));
        if (auto failed = run_record(ctx, tx, *record, GapUndo::delete_row, outbox))
            return roll_back(transaction, ctx.stats, failed->why);
    }
    if (auto ran = call_run(); !ran.applied)
        return roll_back(transaction, ctx.stats, ran.why, std::move(ran.named));
    return commit_records(ctx, transaction, records, outbox);
}

}  // namespace

PassResult run_optimistic_pass(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                               const TransactionRecords& records) {
    std::vector<NamedFailure> entity_held;
    auto result = run_pass(ctx, connection, batch, records, entity_held);
    result.entity_held = std::move(entity_held);
    return result;
}

}  // namespace exo
