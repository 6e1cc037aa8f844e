#pragma once
// The Redis claim protocol of DESIGN.md section 3: one hash per (group,
// idempotency key), changed only by the Lua scripts in lua/ (EVALSHA, reloaded
// on NOSCRIPT). Every call takes a batch and costs one round trip.
//
// Thread-safety: none; one ClaimStore per worker, like its RedisConnection.
// Errors: every method throws RedisError (see redis_error.hpp) when Redis cannot
// be reached or answers with an error; no claim state is then known to have changed.
#include <chrono>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "redis/redis_connection.hpp"

namespace exo {

enum class ClaimStatus {
    acquired,       // new key: ours, with `token`
    taken_over,     // PROCESSING past its lease: ours, with a higher `token`
    duplicate,      // COMPLETED: `stored_result` holds the handler's result
    conflict,       // PROCESSING by another live owner: retry after `retry_after`
    dead_lettered,  // DEAD_LETTERED earlier: `stored_result` holds the reason
};

struct ClaimResult {
    ClaimStatus status = ClaimStatus::conflict;
    FencingToken token{0};                     // acquired / taken_over
    std::string stored_result;                 // duplicate / dead_lettered
    std::chrono::milliseconds retry_after{0};  // conflict: remaining lease
};

enum class FinalState { completed, dead_lettered };

struct CompleteRequest {
    std::string key;  // idempotency key (not the Redis key)
    FencingToken token;
    std::string result;
    FinalState state = FinalState::completed;
};

struct TokenRequest {
    std::string key;
    FencingToken token;
};

// ok: the script did what was asked. lost: the claim is no longer ours (taken over,
// expired, or Redis flushed): PostgreSQL decides, so callers count and log it.
enum class FinishStatus { ok, lost };

class ClaimStore {
public:
    // `owner` identifies this worker uniquely across processes and restarts.
    ClaimStore(RedisConnection& redis, std::string key_prefix, std::string group,
               std::string owner);

    std::vector<ClaimResult> claim(const std::vector<std::string>& keys,
                                   std::chrono::milliseconds lease);
    std::vector<FinishStatus> extend(const std::vector<TokenRequest>& claims,
                                     std::chrono::milliseconds lease);
    std::vector<FinishStatus> complete(const std::vector<CompleteRequest>& requests,
                                       std::chrono::milliseconds ttl);
    std::vector<FinishStatus> release(const std::vector<TokenRequest>& claims);

    const std::string& owner() const { return owner_; }
    std::string redis_key(const std::string& idempotency_key) const;

private:
    RedisConnection& redis_;
    std::string key_prefix_;
    std::string group_;
    std::string owner_;
    // Texts of lua/*.lua, looked up by name once (eval_many caches their shas).
    std::string claim_script_;
    std::string extend_script_;
    std::string complete_script_;
    std::string release_script_;
};

}  // namespace exo
