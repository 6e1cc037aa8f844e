#include "protocol/passes/transaction_pass.hpp"

#include <exo/errors.hpp>
#include "core/key_derivation.hpp"
#include "core/log_context.hpp"
#include "core/text.hpp"
#include "pg/pg_errors.hpp"
#include "protocol/passes/key_reuse.hpp"

namespace exo {

std::optional<RecordFailure> run_record(const PassContext& ctx, pqxx::transaction_base& tx,
                                        BatchRecord& record, GapUndo undo,
                                        TransactionOutbox& outbox) {
    const auto& binding = *record.binding;
    const auto& r = record.pending.record;
    // The handler's log lines and exo's about this record carry its coordinates.
    LogContext log_context(r.topic, r.partition, r.offset, record.key, &record.pending.trace);
    // Read before anything is written: a bad sequence field is the record's
    // fault alone and needs no rollback.
    std::optional<SequenceValue> seq;
    if (binding.sequence && !record.framework_started()) {
        try {
            seq = extract_sequence(*binding.sequence, record.payload);
        } catch (const PermanentError& e) {
            record.dead_letter(e.what());
            return std::nullopt;
        }
    }
    std::chrono::microseconds handler_took{0};
    try {
        const RecordRunInput input{binding,
                                   ctx.group,
                                   r,
                                   record.key,
                                   record.payload,
                                   seq,
                                   record.token.value_or(FencingToken{0}),
                                   ctx.handlers.handler(binding),
                                   ctx.log,
                                   record.pending.attempts + 1,
                                   record.handler_ran,
                                   &handler_took,
                                   &ctx.emit_limits,
                                   &record.pending.trace,
                                   &outbox,
                                   &record.handed_over,
                                   record.outside_failure,
                                   &record.fingerprint};
        auto step = record.framework_started() ? run_handler_in_transaction(tx, input)
                                               : run_record_in_transaction(tx, input, undo);
        ctx.stats.postgres_round_trips += static_cast<std::uint64_t>(step.round_trips);
        if (step.outcome == Outcome::applied) ctx.stats.handler_ran(binding.topic, handler_took);
        if (step.outcome == Outcome::duplicate_postgres) {
            finish_postgres_duplicate(
                record, ExistingRow{step.stored, std::move(step.result), std::move(step.applied)},
                ctx.stats, ctx.log);
        } else if (step.outcome) {
            record.finish(*step.outcome, std::move(step.result));
        } else if (!step.gap_expired.empty()) {
            record.dead_letter(std::move(step.gap_expired), /*record_key=*/false,
                               /*clears_gap=*/true);
        } else {
            ctx.fate.park_for_gap(record, seq->entity, binding.sequence->gap_timeout,
                                  step.gap_waited);
        }
        return std::nullopt;
    } catch (...) {
        return failure_of(std::current_exception(), binding.handler);
    }
}

RecordFailure failure_of(const std::exception_ptr& thrown, const std::string& handler) {
    try {
        std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
        const Failure failure = classify(e);
        if (pauses_the_worker(failure)) throw;  // the whole batch waits for the dependency
        return RecordFailure{failure, failure == Failure::aborted_transaction && !handler.empty()
                                          ? swallowed_error_reason(handler)
                                          : printable_text(e.what())};
    } catch (...) {
        // Not a std::exception: nothing says what it means, so it is retried.
        return RecordFailure{Failure::retryable,
                             (handler.empty() ? "a step" : "handler '" + handler + "'") +
                                 " threw an exception that is not a std::exception"};
    }
}

PassResult commit_records(const PassContext& ctx, ExplicitTransaction& transaction,
                          const TransactionRecords& records, TransactionOutbox& outbox) {
    try {
        ctx.stats.postgres_round_trips += static_cast<std::uint64_t>(outbox.flush());
    } catch (...) {
        return roll_back(transaction, ctx.stats, failure_of(std::current_exception()).why);
    }
    ctx.stats.postgres_round_trips += 2;  // BEGIN and COMMIT
    try {
        transaction.commit(ctx.failpoints);
    } catch (...) {
        // A lost connection rethrows (the outcome is unknown): the dedup rows
        // decide on the retry.
        return PassResult::rolled_back(failure_of(std::current_exception()).why);
    }
    for (auto* record : records) record->note_committed();
    if (outbox.emitted() && ctx.outbox_doorbell) ctx.outbox_doorbell->ring();
    return PassResult::done();
}

PassResult roll_back(ExplicitTransaction& transaction, PipelineStats& stats, std::string why,
                     std::optional<NamedFailure> named) {
    transaction.rollback();
    stats.postgres_round_trips += 2;  // BEGIN and ROLLBACK
    return PassResult::rolled_back(std::move(why), std::move(named));
}

}  // namespace exo
