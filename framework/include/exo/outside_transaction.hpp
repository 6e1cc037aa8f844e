#pragma once
// Work a handler does before its record's transaction: a call to another
// service, a slow lookup. Done in handle(), such a wait holds the transaction
// (and its PostgreSQL connection and row locks) open and idle, and one worker
// thread waits for one record at a time. Done in before_transaction(), it runs
// outside any transaction, and for records of different ordering lanes at the
// same time (different keys under `ordering: key` or `entity`; different
// partitions under `partition`), so a few connections serve many waits.
//
// Add OutsideTransaction as a second base of a Handler (or BatchHandler):
//
//   class PriceHandler final : public exo::Handler, public exo::OutsideTransaction {
//       void before_transaction(exo::OutsideContext& ctx) const override {
//           ctx.hand_over(prices_.quote(ctx.json().at("sku")));  // HTTP, thread-safe client
//       }
//       void handle(exo::HandlerContext& ctx) override {
//           const auto& quote = std::any_cast<const Quote&>(ctx.handed_over());
//           ...  // write the effect in ctx.transaction()
//       }
//   };
//
// When it runs: after the record's Redis claim and before the transaction its
// handle() runs in, on one of the worker's outside threads
// (pipeline.outside_threads) or the batch's own thread, once for each batch
// the record is in. A record the claim settles (a Redis DUPLICATE, a
// CONFLICT), a later copy of a key in its batch, and a dead letter whose
// recording is being retried never get here. A record whose dedup row
// PostgreSQL finds already committed (Redis lost its claim), or whose sequence
// turns out stale or early, did run it and then runs no handle(). A record put
// back (its own retry, a NACK, a batch that failed as a whole, a record of its
// lane ahead of it that failed) runs it again in its next batch, with the same
// attempt() unless its own failure counted. A re-run of handle() within the
// batch (HandlerContext::rerun()) gets the same handed-over value without
// running it again.
//
// Order and threading: the records of one ordering lane run it in their
// order, one at a time, each after the previous one returned; records of
// different lanes run it at the same time, on the same handler instance. So
// before_transaction() must be safe to call from several threads at once
// (it is const: guard any state it changes). handle() still sees each record
// on the worker's thread, after every before_transaction() of its batch
// returned. The order holds per batch: a record whose transaction fails after
// the records behind it in its lane made their calls calls again, and they do
// after it (a service sees r1, r2, r1, r2).
//
// What it may throw, and what follows: the same as handle() (exo/errors.hpp),
// at the record's place in its transaction, once the record is known to be
// still new: RetryableError (or anything else) retries the record with
// backoff, PermanentError dead-letters it, and DependencyError pauses the
// worker. An error of the handler's own database or Redis client means what it
// says about the handler's dependency: a lost connection is a DependencyError,
// an aborted transaction or a lock timeout a RetryableError. The records of its
// lane behind it run no before_transaction() in this batch: they go back
// behind it and come in its next batch, whatever its fate.
//
// Effects outside PostgreSQL happen at least once, and may happen for a record
// that is then never applied (a crash before COMMIT, a failure of its
// transaction, a duplicate found in PostgreSQL). Pass ctx.idempotency_key() to
// services that take one, so a repeated call is harmless.
//
// How long a batch waits for its calls: its slowest lane's calls one after
// another. Under `ordering: partition` a batch's lane is a whole partition's
// records in it (up to pipeline.batch_size); order by key to shorten lanes. A
// call in progress is never interrupted, but when a revoke or shutdown waited
// pipeline.shutdown_timeout_ms for the batch, it makes no further calls: the
// records it has not called are put back (and redelivered), the ones it has
// go on to their transaction.
//
// Example (compiled with the unit tests): tests/header_examples/outside_example.cpp.
#include <any>
#include <optional>
#include <string>

#include <spdlog/logger.h>
#include <nlohmann/json.hpp>

#include <exo/record.hpp>
#include <exo/trace.hpp>

namespace exo {

class JsonPayload;
namespace detail {
struct ContextAccess;
}

// One record as before_transaction() sees it. Only exo creates one; it lives
// for one call.
class OutsideContext {
public:
    OutsideContext(const OutsideContext&) = delete;
    OutsideContext& operator=(const OutsideContext&) = delete;

    const Record& record() const { return record_; }
    const std::string& idempotency_key() const { return key_; }
    // The payload as JSON, parsed once and shared with handle(). Not JSON:
    // throws PermanentError (the record is dead-lettered).
    const nlohmann::json& json();
    spdlog::logger& log() { return log_; }
    // The record's W3C trace, the same handle() sees (HandlerContext::trace()).
    const TraceContext& trace() const;
    // 1 on the first try; higher after retryable failures of this record.
    int attempt() const { return attempt_; }
    // What handle() finds in HandlerContext::handed_over(); the last value
    // wins. Nothing handed over: handle() finds an empty std::any.
    void hand_over(std::any value) { handed_over_ = std::move(value); }

private:
    friend struct detail::ContextAccess;
    OutsideContext(const Record& record, const std::string& key, JsonPayload& payload,
                   spdlog::logger& log, int attempt, const TraceContext* trace,
                   std::any& handed_over)
        : record_(record),
          key_(key),
          payload_(payload),
          log_(log),
          attempt_(attempt),
          trace_(trace),
          handed_over_(handed_over) {}

    const Record& record_;
    const std::string& key_;
    JsonPayload& payload_;
    spdlog::logger& log_;
    int attempt_;
    const TraceContext* trace_;  // the framework's; nullptr: own_trace_, started on first use
    mutable std::optional<TraceContext> own_trace_;
    std::any& handed_over_;  // the record's, kept by exo until its batch ends
};

// The second base of a handler with work outside its transaction (see the file comment).
class OutsideTransaction {
public:
    virtual ~OutsideTransaction() = default;
    // Runs before the record's transaction, concurrently for records of
    // different lanes (see the file comment). Throws as handle() would.
    virtual void before_transaction(OutsideContext& ctx) const = 0;
};

}  // namespace exo
