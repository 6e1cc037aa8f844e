#include "protocol/record_in_transaction.hpp"

#include <exo/errors.hpp>
#include "api/context_access.hpp"
#include "core/text.hpp"
#include "pg/framework_statements.hpp"
#include "protocol/failure_matrix.hpp"

namespace exo {

RecordRunResult run_record_in_transaction(pqxx::transaction_base& tx, const RecordRunInput& in,
                                          GapUndo undo) {
    RecordRunResult out;
    const auto& binding = in.binding;
    const ProcessedRow row{in.consumer_group,
                           in.key,
                           in.token,
                           in.record.topic_partition(),
                           in.record.offset,
                           StoredOutcome::applied,
                           {},
                           in.fingerprint ? *in.fingerprint : std::string()};
    std::optional<SequenceStep> step;
    if (binding.sequence)
        step.emplace(SequenceStep{
            sequence_owner(binding.handler, binding.sequence->scope, in.consumer_group),
            in.sequence->entity, in.sequence->sequence, binding.sequence->mode});
    ++out.round_trips;
    auto start = start_record(tx, row, step);
    if (start.duplicate) {
        out.outcome = Outcome::duplicate_postgres;
        out.stored = start.duplicate->outcome;
        out.result = std::move(start.duplicate->result);
        out.applied = std::move(start.duplicate->applied);
        return out;
    }
    if (!start.verdict)  // another transaction created the entity first: not this record's fault
        throw ContentionError("sequence of " + in.sequence->entity + " moved concurrently");
    if (*start.verdict == SequenceVerdict::stale) {
        update_processed(tx, in.consumer_group, in.key, StoredOutcome::stale, "");
        ++out.round_trips;
        out.outcome = Outcome::stale;
        out.stored = StoredOutcome::stale;
        return out;
    }
    if (*start.verdict == SequenceVerdict::gap) {
        // Not applied, so its dedup row must not stay.
        if (undo == GapUndo::rollback_to_savepoint)
            tx.exec(kRollbackRecord);
        else
            delete_processed(tx, in.consumer_group, in.key);
        // When it was first seen waiting is kept in PostgreSQL (server time),
        // so the timeout survives rebalances and restarts; a sighting in a
        // transaction that rolls back never happened.
        const auto waited = record_gap(tx, in.consumer_group, in.key);
        out.round_trips += 2;
        out.gap_waited = waited;
        out.gap_expired = gap_expiry(binding, in.sequence->entity, in.sequence->sequence, waited);
        return out;
    }
    auto handled = run_handler_in_transaction(tx, in);
    handled.round_trips += out.round_trips;
    return handled;
}

std::string gap_expiry(const BindingConfig& binding, const std::string& entity,
                       std::int64_t sequence, std::chrono::milliseconds waited) {
    if (waited < binding.sequence->gap_timeout) return {};
    return "sequence gap for " + entity + ": " + std::to_string(sequence) +
           " never became next within " + std::to_string(binding.sequence->gap_timeout.count()) +
           " ms (gap_timeout)";
}

RecordRunResult run_handler_in_transaction(pqxx::transaction_base& tx, const RecordRunInput& in) {
    RecordRunResult out;
    const auto& binding = in.binding;
    auto ctx = detail::ContextAccess::record(tx, in.record, in.key, in.payload, in.log, in.attempt,
                                             in.handler_ran, in.emit_limits, in.trace);
    detail::ContextAccess::hand_over(ctx, in.handed_over);
    auto& emitted = detail::ContextAccess::emitted(ctx);
    const auto& result = detail::ContextAccess::result(ctx);
    if (in.outside_failure) std::rethrow_exception(in.outside_failure);  // as if handle() threw
    ++out.round_trips;  // a handler's statements, at least one
    in.handler_ran = true;
    const auto started = std::chrono::steady_clock::now();
    in.handler.handle(ctx);
    if (in.handler_took)
        *in.handler_took = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - started);
    // In the record's transaction (and savepoint): published only if it commits.
    TransactionOutbox own(tx, in.consumer_group, TransactionOutbox::Write::per_record);
    out.round_trips += (in.outbox ? *in.outbox : own).add(std::move(emitted));
    if (!result.empty()) {
        if (!is_postgres_text(result))
            throw PermanentError("handler '" + binding.handler +
                                 "' set a result PostgreSQL cannot store (invalid UTF-8 or a "
                                 "NUL byte): encode binary results, e.g. as hex or base64");
        update_processed(tx, in.consumer_group, in.key, StoredOutcome::applied, result);
        ++out.round_trips;
    }
    out.outcome = Outcome::applied;
    out.result = result;
    return out;
}

}  // namespace exo
