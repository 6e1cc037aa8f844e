#pragma once
// The one extension point of exo (spdlog's base_sink shape): the framework owns
// the protocol (claim, dedup row, sequence check, commit, offsets) and calls
// Handler::handle() once per new record inside the record's PostgreSQL
// transaction. A handler cannot reach the consumer, Redis or offsets, so it
// cannot break the exactly-once invariant.
//
// What a handler may do: read and write PostgreSQL through ctx.transaction();
// throw RetryableError / PermanentError (core/errors.hpp) or anything else
// (treated as retryable). Effects outside PostgreSQL (HTTP, e-mail) run at least
// once: pass ctx.idempotency_key() to such services.
//
// Lifecycle and threading: one Handler instance per worker thread, created by
// its factory at start-up; prepare() runs on each new PostgreSQL connection of
// that worker (including after a reconnect); handle() is never called
// concurrently on one instance.
#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/connection_base>
#include <pqxx/transaction_base>
#include <string>

#include "core/payload.hpp"
#include "core/record.hpp"

namespace exo {

class HandlerContext {
public:
    HandlerContext(pqxx::transaction_base& tx, const Record& record, const std::string& key,
                   JsonPayload& payload, spdlog::logger& log, int attempt)
        : tx_(tx), record_(record), key_(key), payload_(payload), log_(log), attempt_(attempt) {}

    // The record's transaction (inside its own savepoint). Do not commit or abort it.
    pqxx::transaction_base& transaction() { return tx_; }
    const Record& record() const { return record_; }
    const std::string& idempotency_key() const { return key_; }
    // The payload as JSON, parsed once. Throws PermanentError if it is not JSON.
    const nlohmann::json& json() { return payload_.document(); }
    spdlog::logger& log() { return log_; }
    // 1 on the first try; higher after retryable failures.
    int attempt() const { return attempt_; }
    // Stored with the dedup row and in the Redis claim; returned for duplicates.
    void set_result(std::string result) { result_ = std::move(result); }
    const std::string& result() const { return result_; }

private:
    pqxx::transaction_base& tx_;
    const Record& record_;
    const std::string& key_;
    JsonPayload& payload_;
    spdlog::logger& log_;
    int attempt_;
    std::string result_;
};

class Handler {
public:
    virtual ~Handler() = default;
    // Prepare statements on a (new) connection. Default: nothing.
    virtual void prepare(pqxx::connection_base& connection) { (void)connection; }
    // Apply one record's effect. See the file comment for what it may throw.
    virtual void handle(HandlerContext& ctx) = 0;
};

using HandlerFactory = std::function<std::unique_ptr<Handler>()>;

}  // namespace exo
