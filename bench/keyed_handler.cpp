#include "keyed_handler.hpp"

#include <thread>

#include <exo/errors.hpp>

namespace exo::bench {
namespace {

constexpr const char* kApply = "keyed_apply";
constexpr const char* kWait = "keyed_pg_sleep";

}  // namespace

void KeyedWaitHandler::prepare(pqxx::connection_base& connection) {
    connection.prepare(kApply,
                       "WITH r AS (INSERT INTO keyed_last AS l (key, applied) VALUES ($1, 1) "
                       "ON CONFLICT (key) DO UPDATE SET applied = l.applied + 1 "
                       "RETURNING applied) "
                       "INSERT INTO keyed_effects (event_id, key, seq, rank) "
                       "SELECT $2, $1, $3, applied FROM r");
    connection.prepare(kWait, "SELECT pg_sleep($1)");
}

void KeyedWaitHandler::handle(HandlerContext& ctx) {
    const auto& key = ctx.record().key;
    const auto& doc = ctx.json();
    if (!key || !doc.contains("seq") || !doc["seq"].is_number_integer())
        throw PermanentError("a keyed record wants a Kafka key and an integer seq");
    if (mode_ == KeyedWait::client)
        std::this_thread::sleep_for(wait_);
    else if (mode_ == KeyedWait::server)
        ctx.transaction().exec_prepared(kWait, static_cast<double>(wait_.count()) / 1e6);
    ctx.transaction().exec_prepared(kApply, *key, ctx.idempotency_key(), doc["seq"].get<int>());
}

void KeyedOutsideWaitHandler::before_transaction(OutsideContext& ctx) const {
    (void)ctx;
    std::this_thread::sleep_for(wait_);
}

}  // namespace exo::bench
