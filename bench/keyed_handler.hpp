#pragma once
// The handler of the per-key concurrency scenarios (keyed_scenario.hpp): each record waits
// `wait` of simulated I/O, then writes its effect row, which says where in its key's
// history it was applied. exo has no hook that runs handler code outside the batch's
// transaction, so either wait holds the transaction open:
//  - client wait: std::this_thread::sleep_for in handle(), as a handler calling an HTTP
//    service would (the transaction open and idle meanwhile);
//  - server wait: `SELECT pg_sleep(...)` in the transaction, as a slow query would.
//
// The effect: an upsert of keyed_last (key -> records applied so far) returning the new
// count, and a keyed_effects row (event id, key, the record's produced position in its
// key, that count). The upsert's row lock serializes a key's transactions in commit order,
// so the count is the record's rank among its key's committed records: a record applied
// out of its key's order, twice or never shows in check_keyed (keyed_workload.hpp).
//
// Thread-safety: one instance per batch thread (exo's contract for handlers).
#include <chrono>

#include <exo/handler.hpp>

namespace exo::bench {

enum class KeyedWait {
    client,  // sleep_for in handle(): an HTTP-like call while the transaction is idle
    server,  // SELECT pg_sleep() in the transaction: a slow query
};

// The tables the handler writes, created in a scenario's schema before the daemon starts.
inline constexpr const char* kKeyedTablesSql =
    "CREATE TABLE keyed_last (key text PRIMARY KEY, applied integer NOT NULL);"
    "CREATE TABLE keyed_effects (id bigserial PRIMARY KEY, event_id text NOT NULL,"
    " key text NOT NULL, seq integer NOT NULL, rank integer NOT NULL)";

class KeyedWaitHandler final : public Handler {
public:
    KeyedWaitHandler(KeyedWait mode, std::chrono::microseconds wait) : mode_(mode), wait_(wait) {}
    void prepare(pqxx::connection_base& connection) override;
    // Payload {"eventId": str, "seq": int}; the key is the Kafka record key. Throws
    // PermanentError for a record without a key or seq (none such is produced).
    void handle(HandlerContext& ctx) override;

private:
    KeyedWait mode_;
    std::chrono::microseconds wait_;
};

}  // namespace exo::bench
