#pragma once
// Batch handlers: one call for many records of a transaction, so a handler can
// write its effects set-based (one multi-row statement per batch instead of
// one per record), like Spring Kafka's batch listeners or Karafka's
// `consume` over `messages`, but with exo's exactly-once effect per record.
//
// What handle_batch() receives: a run of consecutive records of one bound
// topic that survived the Redis claim, the dedup row and the sequence check of
// this transaction, in the transaction's order: the order their sequences were
// decided in, so an entity's records arrive in sequence order even when they
// came from several topics bound to this handler (each topic's records then
// come in calls of their own, in that order). Partition order always holds.
// Usually a transaction makes one call per topic; the records of a partition
// are never split between calls. Their dedup rows are already written in
// ctx.transaction(); whatever handle_batch() writes there commits with them,
// or nothing does. Duplicates, stale records and sequence gaps never reach it.
//
// Failures: the contract is per record, as if each record had its own
// handle() (exo/handler.hpp: the same "must not" list applies).
//  - Call ctx.fail(i, cause) (or throw BatchRecordFailed(i, cause)) when
//    record i of ctx.records() is bad. The transaction rolls back; record i
//    follows cause's path (PermanentError: dead-lettered; anything else:
//    retried with backoff, then dead-lettered) and the records of its
//    partition behind it wait for it; the others run again at once, in a new
//    transaction, in a new handle_batch() call without record i (their
//    rerun() is then true).
//  - Anything else thrown says nothing of which record failed. The
//    transaction rolls back and each record runs again alone, in a savepoint
//    of its own, as a batch of one: slower (a round trip per record), but a
//    failure there is that record's. So the good records of a batch commit
//    exactly once whatever the bad one does.
//  - A record's json() throws BatchRecordFailed(i, PermanentError) for a
//    payload that is not JSON, and its emit() for a record Kafka cannot take,
//    so such a record is isolated without a per-record run.
//
// How often: at least once per record and delivery, more when a batch runs
// again after a failure (see above) or when a record is retried. Only one
// run's effects ever commit. A batch of one (ctx.records().size() == 1) is also how a
// record runs when it is isolated, when its group holds only that record, and
// in the handler test kit (exo/testing.hpp), through handle().
//
// Lifecycle and threading as Handler: one instance per worker thread and
// binding; prepare() per connection; never called concurrently.
//
// Example (compiled with the unit tests): tests/header_examples/batch_handler_example.cpp.
#include <cstddef>
#include <exception>
#include <span>

#include <exo/errors.hpp>
#include <exo/handler.hpp>

namespace exo {

// A run of records for handle_batch(): the transaction they commit in, their
// contexts, and fail(i). Only exo creates one; it lives for one call.
class BatchContext {
public:
    BatchContext(const BatchContext&) = delete;
    BatchContext& operator=(const BatchContext&) = delete;

    // The transaction all records of the batch commit in. Do not commit or
    // abort it, and do not swallow its errors (exo/handler.hpp).
    pqxx::transaction_base& transaction() { return tx_; }
    // One context per record, in the transaction's order (see the file
    // comment): record(), idempotency_key(), json(), attempt(), rerun(),
    // set_result() and emit() as in handle(), for that record.
    std::span<HandlerContext> records() { return records_; }
    spdlog::logger& log() { return log_; }

    // Says record i of records() failed with `cause`: throws BatchRecordFailed(i, cause).
    template <class Error>
    [[noreturn]] void fail(std::size_t i, Error cause) const {
        throw BatchRecordFailed(i, std::make_exception_ptr(std::move(cause)));
    }

private:
    friend struct detail::ContextAccess;
    BatchContext(pqxx::transaction_base& tx, std::span<HandlerContext> records, spdlog::logger& log)
        : tx_(tx), records_(records), log_(log) {}

    pqxx::transaction_base& tx_;
    std::span<HandlerContext> records_;
    spdlog::logger& log_;
};

class BatchHandler : public Handler {
public:
    // Apply the effects of every record of ctx, in order. See the file comment
    // for what it receives and what its exceptions mean.
    virtual void handle_batch(BatchContext& ctx) = 0;

    // A batch of one: how exo runs a record alone. A BatchRecordFailed thrown
    // for it is unwrapped, so its cause is what the record failed with.
    void handle(HandlerContext& ctx) final;
};

}  // namespace exo
