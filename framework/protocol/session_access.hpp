#pragma once
// What the protocol asks of the connections a batch runner keeps
// (runtime/sessions/): a step runs on them and reports the calls that failed;
// it never opens, reopens, backs off or logs an outage. Those are the
// runtime's: the protocol has no connection lifetimes and no threads, and a
// test can hand a step connections of its own (a Redis that is down, a
// PostgreSQL connection it opened).
//
// Thread-safety: that of the implementation (one batch runner's thread).
#include <cstdint>
#include <vector>

#include <pqxx/connection>

#include "redis/claim_store.hpp"

namespace exo {

// The runner's PostgreSQL connection.
class PostgresAccess {
public:
    // The open connection, connecting (and preparing) first if needed. Throws
    // pqxx::broken_connection when PostgreSQL is unreachable, HandlerPrepareError
    // (protocol/failure_matrix.hpp) when a handler cannot prepare, other pqxx
    // errors from preparing (classify_pg_error).
    virtual pqxx::connection& connection() = 0;
    // A failure left the connection unusable (or its state unknown): the next
    // connection() opens a new one.
    virtual void drop() = 0;
    // A call failed: the failures in a row, this one included (the n of the
    // caller's backoff).
    virtual int failed() = 0;

protected:
    PostgresAccess() = default;
    PostgresAccess(const PostgresAccess&) = default;
    PostgresAccess& operator=(const PostgresAccess&) = default;
    ~PostgresAccess() = default;
};

// The runner's Redis claim store.
class ClaimAccess {
public:
    // The claim store; nullptr while Redis is down (its backoff not passed) and
    // always with claim.store: postgres. A connect that fails is counted here:
    // the caller does not call failed() for a nullptr. Never throws RedisError.
    virtual ClaimStore* claims() = 0;
    // A call failed (counted for the backoff) / a round trip answered.
    virtual void failed() = 0;
    virtual void answered() = 0;
    // Round trips of the current connection, for the stats (0 without one).
    virtual std::uint64_t round_trips() const = 0;

protected:
    ClaimAccess() = default;
    ClaimAccess(const ClaimAccess&) = default;
    ClaimAccess& operator=(const ClaimAccess&) = default;
    ~ClaimAccess() = default;
};

// The claims the runner's batch holds, kept alive by the process's lease
// renewer while they are held (runtime/sessions/lease_keeper.hpp).
class ClaimLeases {
public:
    // The claims to keep alive from now on (replaces the earlier set). Called
    // without a claim before completing or releasing it in Redis, so a renewal
    // that answers LOST afterwards is known to be the finish's own. Ignored
    // once the runtime abandoned the batch's claims (a revoke's deadline).
    virtual void hold(std::vector<TokenRequest> claims) = 0;

protected:
    ClaimLeases() = default;
    ClaimLeases(const ClaimLeases&) = default;
    ClaimLeases& operator=(const ClaimLeases&) = default;
    ~ClaimLeases() = default;
};

}  // namespace exo
