#pragma once
// The handlers of the per-key concurrency scenarios (keyed_scenario.hpp): each record waits
// `wait` of simulated I/O, then writes its effect row, which says where in its key's
// history it was applied. Where the wait is:
//  - client: std::this_thread::sleep_for in handle(), as a handler calling an HTTP
//    service there would (the transaction open and idle meanwhile);
//  - server: `SELECT pg_sleep(...)` in the transaction, as a slow query would;
//  - outside: sleep_for in before_transaction() (exo/outside_transaction.hpp), the same
//    call made before the transaction, handle() left with the effect alone.
//
#include <chrono>

#include <exo/handler.hpp>
#include <exo/outside_transaction.hpp>

namespace exo::bench {

enum class KeyedWait {
    client,   // sleep_for in handle(): an HTTP-like call while the transaction is idle
    server,   // SELECT pg_sleep() in the transaction: a slow query
    outside,  // sleep_for in before_transaction(): the call before the transaction
};

// The tables the handler writes, created in a scenario's schema before the daemon starts.
inline constexpr const char* kKeyedTablesSql =
    "CREATE TABLE keyed_last (key text PRIMARY KEY, applied integer NOT NULL);"
    "CREATE TABLE keyed_effects (id bigserial PRIMARY KEY, event_id text NOT NULL,"
    " key text NOT NULL, seq integer NOT NULL, rank integer NOT NULL)";

class KeyedWaitHandler : public Handler {
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

// KeyedWait::outside: the wait in before_transaction(), which may run on several threads
// at once (it only sleeps).
class KeyedOutsideWaitHandler final : public KeyedWaitHandler, public OutsideTransaction {
public:
    explicit KeyedOutsideWaitHandler(std::chrono::microseconds wait)
        : KeyedWaitHandler(KeyedWait::outside, wait), wait_(wait) {}
    void before_transaction(OutsideContext& ctx) const override;

private:
    std::chrono::microseconds wait_;
};

}  // namespace exo::bench
