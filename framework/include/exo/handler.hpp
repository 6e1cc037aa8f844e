#pragma once
// The one extension point of exo (spdlog's base_sink shape): the framework owns
// the protocol (claim, dedup row, sequence check, commit, offsets) and calls
// Handler::handle() for each new record inside the batch's PostgreSQL
// transaction; only the effects of a run that commits remain. A handler cannot reach the consumer,
// Redis or offsets, so it cannot break the exactly-once invariant.
//
// What a handler may do: read and write PostgreSQL through ctx.transaction();
// emit Kafka records with ctx.emit() (exo/outbox.hpp: they are published only if
// this run commits, exactly once per record, whatever the redeliveries); throw RetryableError /
// PermanentError (exo/errors.hpp) or anything else (treated as retryable). Effects outside
// PostgreSQL (HTTP, e-mail) run at least once: pass ctx.idempotency_key() to such services.
//
// What a handler must not do: commit or roll back the transaction, or catch a
// database error and carry on. PostgreSQL aborts the whole transaction on any
// failed statement; a handler that swallows the error leaves it aborted, and exo
// then treats the record as failed (retried, then dead-lettered: see
// docs/design.md, "Swallowed database errors"). To tolerate an expected error,
// avoid it in SQL (INSERT ... ON CONFLICT DO NOTHING), or wrap the statement in
// your own "SAVEPOINT h" / "ROLLBACK TO SAVEPOINT h" / "RELEASE SAVEPOINT h"
// (ctx.transaction() is a pqxx::nontransaction on an explicit BEGIN, so
// pqxx::subtransaction does not apply).
//
// How often handle() runs: at least once per new record and delivery, and more
// than once when the record is re-run: after its own retryable failure
// (ctx.attempt() > 1), or because another record of its batch failed, which rolls
// the whole batch back and runs it again with a savepoint per record
// (ctx.rerun() is true). Either way only one run's effects ever commit.
//
// Waiting on another service (HTTP, a slow lookup): do it in before_transaction()
// (exo/outside_transaction.hpp), outside the transaction and at the same time
// for records of different ordering lanes, and hand its answer to handle().
//
// Many records per call: derive from BatchHandler (exo/batch_handler.hpp) and
// implement handle_batch() instead, to write a batch's effects set-based.
//
// Lifecycle and threading: one Handler instance per worker thread, created by
// its factory at start-up; prepare() runs on each new PostgreSQL connection of
// that worker (including after a reconnect); handle() is never called
// concurrently on one instance.
//
// Example (compiled with the unit tests): tests/header_examples/handler_example.cpp.
#include <spdlog/logger.h>

#include <any>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/connection_base>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include <exo/options.hpp>
#include <exo/outbox.hpp>
#include <exo/record.hpp>
#include <exo/trace.hpp>

namespace exo {

class JsonPayload;
namespace detail {
struct ContextAccess;  // exo's own: builds contexts and reads what a handler left in them
}

// One record as its handler sees it: handle() gets one, and a batch handler one
// per record (BatchContext::records()). Only exo creates them; each lives for
// one call of the handler.
class HandlerContext {
public:
    HandlerContext(const HandlerContext&) = delete;
    HandlerContext& operator=(const HandlerContext&) = delete;
    HandlerContext(HandlerContext&&) = default;

    // The transaction the record's effects commit in (possibly inside a savepoint
    // of this record; in a batch, the batch's). Do not commit or abort it, and do
    // not swallow its errors (see the file comment).
    pqxx::transaction_base& transaction() { return tx_; }
    const Record& record() const { return record_; }
    const std::string& idempotency_key() const { return key_; }
    // The payload as JSON, parsed once (and shared with key derivation). Not
    // JSON: throws PermanentError, or in a batch BatchRecordFailed(i,
    // PermanentError), so only this record is dead-lettered.
    const nlohmann::json& json();
    spdlog::logger& log() { return log_; }
    // This record's W3C trace (exo/trace.hpp): trace_id as its log lines show it,
    // continued from its traceparent header or new; span_id stands for exo's
    // processing of it. emit() puts its traceparent (and tracestate) on each
    // emitted record by itself, unless given a traceparent header; pass
    // trace().traceparent() as the `traceparent` of calls the handler makes
    // (HTTP, gRPC) to keep them in the trace. The same for every attempt of one
    // delivery; a redelivery of a record without a valid traceparent gets a new trace.
    const TraceContext& trace() const;
    // 1 on the first try; higher after retryable failures of this record.
    int attempt() const { return attempt_; }
    // True when this call repeats, within one batch, a run whose effects were
    // rolled back without counting an attempt: another record of the batch
    // failed, this record's own failure in the savepoint-free pass forced a
    // re-run with savepoints, or a failed COMMIT made each record run alone.
    bool rerun() const { return rerun_; }
    // What the handler's before_transaction() handed over for this record
    // (exo/outside_transaction.hpp): the same value on every run of this
    // batch; an empty std::any if it handed nothing or the handler has no
    // such work.
    const std::any& handed_over() const;
    // Stored with the dedup row and in the Redis claim; returned for duplicates.
    void set_result(std::string result) { result_ = std::move(result); }

    // Emits a Kafka record through the outbox (exo/outbox.hpp): it is written
    // in this record's transaction after the handler returns, and the daemon's
    // relay publishes it once that transaction committed. A run that throws
    // emits nothing. A record Kafka or PostgreSQL cannot take (see
    // outbox_message_problem()) throws PermanentError, or in a batch
    // BatchRecordFailed(i, PermanentError): this record is dead-lettered.
    void emit(std::string topic, std::optional<std::string> key, std::string value,
              std::vector<RecordHeader> headers = {});

private:
    friend struct detail::ContextAccess;
    HandlerContext(pqxx::transaction_base& tx, const Record& record, const std::string& key,
                   JsonPayload& payload, spdlog::logger& log, int attempt, bool rerun,
                   const EmitLimits* emit_limits, const TraceContext* trace,
                   std::optional<std::size_t> batch_index)
        : tx_(tx),
          record_(record),
          key_(key),
          payload_(payload),
          log_(log),
          attempt_(attempt),
          rerun_(rerun),
          emit_limits_(emit_limits),
          batch_index_(batch_index),
          trace_(trace) {}
    // A failure of this record found by json() or emit(): `cause` as it is, or
    // named as this record's in its batch.
    [[noreturn]] void fail_with_current() const;

    pqxx::transaction_base& tx_;
    const Record& record_;
    const std::string& key_;
    JsonPayload& payload_;
    spdlog::logger& log_;
    int attempt_;
    bool rerun_;
    const EmitLimits* emit_limits_;           // what emit() accepts; nullptr: librdkafka's defaults
    std::optional<std::size_t> batch_index_;  // set: record i of a BatchContext
    const TraceContext* trace_;  // the framework's; nullptr: own_trace_, started on first use
    mutable std::optional<TraceContext> own_trace_;
    const std::any* handed_over_ = nullptr;  // the record's (set by exo); nullptr: none
    std::string result_;
    std::vector<OutboxMessage> emitted_;  // in order; written by exo after the call
};

class Handler {
public:
    virtual ~Handler() = default;
    // Prepare statements on a (new) connection. Default: nothing.
    virtual void prepare(pqxx::connection_base& connection) { (void)connection; }
    // Apply one record's effect. See the file comment for what it may throw.
    virtual void handle(HandlerContext& ctx) = 0;
};

// Makes one handler for one binding: called once per worker thread and binding at
// start-up, with that binding's `options:` (HandlerOptions). An OptionError (a bad
// or missing option) stops the start-up with exit code 2.
using HandlerFactory = std::function<std::unique_ptr<Handler>(const HandlerOptions& options)>;

}  // namespace exo
