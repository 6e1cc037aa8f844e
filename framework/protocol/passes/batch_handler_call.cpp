#include "protocol/passes/batch_handler_call.hpp"

#include "api/context_access.hpp"
#include "core/text.hpp"
#include "pg/pg_errors.hpp"
#include "pg/record_start.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

// The handler's view of the run: one record context per record, pointing into
// it. (The one place a BatchContext's records are made.)
std::vector<HandlerContext> entries_of(pqxx::transaction_base& tx, const PassContext& ctx,
                                       const Run& run) {
    std::vector<HandlerContext> entries;
    entries.reserve(run.size());
    for (std::size_t n = 0; n < run.size(); ++n) {
        auto& record = *run[n];
        entries.push_back(
            detail::ContextAccess::record(tx, record.pending.record, record.key, record.payload,
                                          ctx.log, record.pending.attempts + 1, record.handler_ran,
                                          &ctx.emit_limits, &record.pending.trace, n));
        detail::ContextAccess::hand_over(entries.back(), &record.handed_over);
        record.handler_ran = true;  // a later run of it in this batch is a rerun
    }
    return entries;
}

// What a BatchRecordFailed's cause means; throws what pauses the worker.
RecordFailure cause_of(const BatchRecordFailed& e, const std::string& handler) {
    if (!e.cause()) return {Failure::retryable, printable_text(e.what())};
    return failure_of(e.cause(), handler);
}

}  // namespace

RunResult call_batch_handler(const PassContext& ctx, pqxx::transaction_base& tx,
                             BatchHandler& handler, const Run& run, TransactionOutbox& outbox) {
    const auto& binding = *run.front()->binding;
    auto entries = entries_of(tx, ctx, run);
    auto context = detail::ContextAccess::batch(tx, entries, ctx.log);
    ctx.stats.postgres_round_trips++;  // a handler's statements, at least one
    const auto started = Clock::now();
    std::chrono::microseconds took{0};  // handle_batch() alone, as handle() on the per-record path
    try {
        handler.handle_batch(context);
        took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
        // Its emits, every record's in batch order, to the transaction's
        // outbox; if one were written here, its failure would be one of the
        // handler's statements (a handler that swallowed a database error left
        // the transaction aborted): the careful pass finds the record alone.
        for (auto& entry : entries)
            ctx.stats.postgres_round_trips += static_cast<std::uint64_t>(
                outbox.add(std::move(detail::ContextAccess::emitted(entry))));
    } catch (const BatchRecordFailed& e) {
        auto [failure, why] = cause_of(e, binding.handler);
        if (e.index() < run.size())
            return RunResult::failed(why, NamedFailure{run[e.index()], failure, why});
        ctx.log.warn(
            "handler '{}' named record {} of a batch of {} as failed; running each record alone "
            "to find it",
            binding.handler, e.index(), run.size());
        return RunResult::failed(why);
    } catch (...) {
        // Which record failed is unknown: the careful pass runs each alone.
        return RunResult::failed(failure_of(std::current_exception(), binding.handler).why);
    }
    ctx.stats.handler_ran(binding.topic, took, run.size());
    std::vector<std::string> keys;
    std::vector<std::string> results;
    for (std::size_t n = 0; n < run.size(); ++n) {
        const auto& result = detail::ContextAccess::result(entries[n]);
        if (result.empty()) continue;
        if (!is_postgres_text(result)) {
            std::string why = "handler '" + binding.handler +
                              "' set a result PostgreSQL cannot store (invalid UTF-8 or a NUL "
                              "byte): encode binary results, e.g. as hex or base64";
            return RunResult::failed(why, NamedFailure{run[n], Failure::permanent, why});
        }
        keys.push_back(run[n]->key);
        results.push_back(result);
    }
    if (!keys.empty()) {
        store_results(tx, ctx.group, keys, results);
        ctx.stats.postgres_round_trips++;
    }
    for (std::size_t n = 0; n < run.size(); ++n) {
        run[n]->finish(Outcome::applied, std::move(detail::ContextAccess::result(entries[n])));
    }
    return RunResult::ran();
}

}  // namespace exo
