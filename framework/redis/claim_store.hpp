#pragma once
// The Redis claim protocol of docs/design.md section 3: one hash per (group,
// idempotency key), changed only by the Lua scripts in lua/ (EVALSHA, reloaded
// on NOSCRIPT). Every call takes a batch and costs one round trip: one EVALSHA
// per max_keys_per_call keys, each script looping over its keys, because Redis
// spends most of a one-key call on command dispatch and Lua entry. A call holds
// keys of many hash slots, so the claims need a single Redis (a primary, with or
// without replicas), not Redis Cluster.
//
// Thread-safety: none; one ClaimStore per worker, like its RedisConnection.
// Errors: every method throws RedisIoError when Redis cannot be reached (the
// connection is then dead) and RedisReplyError when a whole call answered with an
// error (OOM, READONLY, NOPERM...; the connection stays usable). The other calls
// of the batch may have been handled all the same, so after a throw no claim
// state is known; retrying the batch is safe (claim_reply.cpp says why). An error
// for one key alone (a key that is not a claim hash) is that key's answer in
// claim() (ClaimStatus::failed), and throws RedisReplyError in the others.
// Replies are read by claim_reply.hpp, which says which ones are accepted.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <exo/types.hpp>
#include "core/outcome.hpp"
#include "redis/claim_reply.hpp"  // ClaimResult, FinishStatus
#include "redis/redis_connection.hpp"

namespace exo {

struct CompleteRequest {
    std::string key;  // idempotency key (not the Redis key)
    FencingToken token;
    std::string result;
    // The key's durable outcome: DEAD_LETTERED claims answer DEAD_LETTERED, the
    // others (APPLIED, STALE) COMPLETED, both with `result`.
    StoredOutcome outcome = StoredOutcome::applied;
    // The fingerprint of the copy the key's dedup row was written for
    // (core/record_fingerprint.hpp), answered by later claims; empty: none.
    std::string fingerprint{};
};

struct TokenRequest {
    std::string key;
    FencingToken token;
};

// The Redis key of a claim: prefix, group and idempotency key, each with '%' and
// ':' percent-encoded, joined by ':'. Escaping each part makes the key
// unambiguous: group "billing" + key "eu:42" and group "billing:eu" + key "42"
// must never share a claim (the second would be answered DUPLICATE and its
// handler skipped). Pure; the parts may hold any bytes.
std::string claim_key(std::string_view prefix, std::string_view group, std::string_view key);
std::string claim_key_part(std::string_view part);

class ClaimStore {
public:
    // At most this many keys per script call, so that one call (a few commands per
    // key, a few milliseconds per 1,000 keys) never blocks Redis for long; a larger
    // batch sends several calls in the same pipeline, still one round trip.
    static constexpr std::size_t max_keys_per_call = 1000;

    // `owner` identifies this worker uniquely across processes and restarts.
    ClaimStore(RedisConnection& redis, std::string key_prefix, std::string group,
               std::string owner);

    // One result per key, in order. When a call fails as a whole, the claims the
    // other calls acquired are released (best effort) before it throws: the
    // caller, told nothing, could neither settle nor renew them.
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
