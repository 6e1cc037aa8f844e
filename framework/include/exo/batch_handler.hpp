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
//  - Throw BatchRecordFailed(i, cause) (or call ctx.fail(i, cause)) when
//    record i is bad. The transaction rolls back; record i follows cause's path
//    (PermanentError: dead-lettered; anything else: retried with backoff, then
//    dead-lettered) and the records of its partition behind it wait for it;
//    the others run again at once, in a new transaction, in a new
//    handle_batch() call without record i (their rerun(j) is then true).
//  - Anything else thrown says nothing of which record failed. The
//    transaction rolls back and each record runs again alone, in a savepoint
//    of its own, as a batch of one: slower (a round trip per record), but a
//    failure there is that record's. So the good records of a batch commit
//    exactly once whatever the bad one does.
//  - ctx.json(i) throws BatchRecordFailed(i, PermanentError) for a payload that
//    is not JSON, so an unparsable record is isolated without a per-record run.
//
// How often: at least once per record and delivery, more when a batch runs
// again after a failure (see above) or when a record is retried. Only one
// run's effects ever commit. A batch of one (ctx.size() == 1) is also how a
// record runs when it is isolated, when its group holds only that record, and
// in the handler test kit (exo/testing.hpp), through handle().
//
// Lifecycle and threading as Handler: one instance per worker thread and
// binding; prepare() per connection; never called concurrently.
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include <exo/errors.hpp>
#include <exo/handler.hpp>

namespace exo {

class BatchContext {
public:
    // One record of the batch. Pointers into the caller's state, valid for the call.
    struct Entry {
        const Record* record = nullptr;
        const std::string* key = nullptr;
        JsonPayload* payload = nullptr;
        int attempt = 1;
        bool rerun = false;
        std::string result;
        std::vector<OutboxMessage> emitted;  // BatchContext::emit(i, ...), in order
        // Its delivery's trace (trace(i)); the framework always sets it.
        const TraceContext* trace = nullptr;
    };

    // `max_emit_bytes`: the relay producer's message.max.bytes (exo/outbox.hpp).
    BatchContext(pqxx::transaction_base& tx, std::vector<Entry>& entries, spdlog::logger& log,
                 std::size_t max_emit_bytes = kDefaultMaxMessageBytes)
        : tx_(tx), entries_(entries), log_(log), max_emit_bytes_(max_emit_bytes) {}

    // The transaction all records of the batch commit in. Do not commit or
    // abort it, and do not swallow its errors (exo/handler.hpp).
    pqxx::transaction_base& transaction() { return tx_; }
    std::size_t size() const { return entries_.size(); }
    // Record i of the batch (0 <= i < size(); out of range throws std::out_of_range).
    const Record& record(std::size_t i) const { return *entries_.at(i).record; }
    const std::string& idempotency_key(std::size_t i) const { return *entries_.at(i).key; }
    // Record i's payload as JSON, parsed once. Not JSON: throws
    // BatchRecordFailed(i, PermanentError), which isolates record i.
    const nlohmann::json& json(std::size_t i);
    // 1 on record i's first try; higher after its retryable failures.
    int attempt(std::size_t i) const { return entries_.at(i).attempt; }
    // True when record i's handler ran earlier in this delivery's batch and
    // was rolled back without counting an attempt (HandlerContext::rerun()).
    bool rerun(std::size_t i) const { return entries_.at(i).rerun; }
    // Stored with record i's dedup row and Redis claim; returned for its duplicates.
    void set_result(std::size_t i, std::string result) {
        entries_.at(i).result = std::move(result);
    }
    const std::string& result(std::size_t i) const { return entries_.at(i).result; }
    spdlog::logger& log() { return log_; }
    // Record i's own W3C trace (HandlerContext::trace()): each record of a batch
    // keeps the trace it came with; emit(i, ...) carries record i's by itself.
    const TraceContext& trace(std::size_t i) const;
    // Emits a Kafka record on behalf of record i (HandlerContext::emit): written
    // with record i's effects, published only if they commit. A record Kafka or
    // PostgreSQL cannot take throws BatchRecordFailed(i, PermanentError).
    void emit(std::size_t i, std::string topic, std::optional<std::string> key, std::string value,
              std::vector<RecordHeader> headers = {});
    // What record i emitted so far, in order.
    std::vector<OutboxMessage>& emitted(std::size_t i) { return entries_.at(i).emitted; }

    // Says record i failed with `cause`: throws BatchRecordFailed(i, cause).
    template <class Error>
    [[noreturn]] void fail(std::size_t i, Error cause) const {
        throw BatchRecordFailed(i, std::make_exception_ptr(std::move(cause)));
    }

private:
    pqxx::transaction_base& tx_;
    std::vector<Entry>& entries_;
    spdlog::logger& log_;
    std::size_t max_emit_bytes_;
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
