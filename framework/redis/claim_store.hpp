#pragma once
// The Redis claim protocol of docs/design.md#redis-claim-record-and-scripts: one hash per (group,
// idempotency key), changed only by the Lua scripts in lua/ (EVALSHA, reloaded
// on NOSCRIPT). Every call takes a batch and costs one round trip: one EVALSHA
// per max_keys_per_call keys, each script looping over its keys, because Redis
// spends most of a one-key call on command dispatch and Lua entry.
//
// On a single Redis a call holds keys of any slot. On Redis Cluster a script's
// keys must share a hash slot, so the claim keys are laid out differently
// (claim_key(KeyLayout::cluster, ...)): a hash tag of the group and a bucket of
// the idempotency key, so a batch's keys fall in at most cluster_buckets slots;
// the batch is sent as one call per slot (per max_keys_per_call keys), one
// pipeline per master (redis_router.hpp). The bucket depends on the key alone,
// so one idempotency key has one claim whatever partition carries it.
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
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <exo/types.hpp>
#include "core/outcome.hpp"
#include "redis/claim_reply.hpp"  // ClaimResult, FinishStatus
#include "redis/redis_connection.hpp"
#include "redis/redis_router.hpp"

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

// Claims and the owner they are held by (ClaimStore::extend_owned).
struct OwnedClaims {
    std::string owner;
    std::vector<TokenRequest> claims;
};

// The Redis key of a claim: prefix, group and idempotency key, each with '%' and
// ':' percent-encoded, joined by ':'. Escaping each part makes the key
// unambiguous: group "billing" + key "eu:42" and group "billing:eu" + key "42"
// must never share a claim (the second would be answered DUPLICATE and its
// handler skipped). Pure; the parts may hold any bytes.
std::string claim_key(std::string_view prefix, std::string_view group, std::string_view key);
std::string claim_key_part(std::string_view part);

// How claim keys are named. `single`: the key above, unchanged since the first
// release (no migration for a single Redis). `cluster`:
//     <prefix>:{<group>:<bucket>}:<key>
// each part with '%', ':', '{' and '}' percent-encoded (so the first '{' is the
// tag's and the group cannot end it), bucket = CRC16 of the idempotency key mod
// cluster_buckets, two digits. Redis hashes only the tag, so all the keys of a
// (group, bucket) share a slot.
enum class KeyLayout { single, cluster };
inline constexpr int cluster_buckets = 16;
std::string claim_key(KeyLayout layout, std::string_view prefix, std::string_view group,
                      std::string_view key);
// The bucket (0..cluster_buckets-1) of an idempotency key in the cluster layout.
int claim_bucket(std::string_view key);
// The hash tag of a (group, bucket) in the cluster layout, "{<group>:<bucket>}",
// the only text Redis hashes: the slot of every claim of that bucket.
std::string cluster_hash_tag(std::string_view group, int bucket);
// The layout of the claim keys `router` reaches.
inline KeyLayout key_layout(const RedisRouter& router) {
    return router.cluster() ? KeyLayout::cluster : KeyLayout::single;
}

class ClaimStore {
public:
    // At most this many keys per script call, so that one call (a few commands per
    // key, a few milliseconds per 1,000 keys) never blocks Redis for long; a larger
    // batch sends several calls in the same pipeline, still one round trip.
    static constexpr std::size_t max_keys_per_call = 1000;

    // `owner` identifies this worker uniquely across processes and restarts.
    // Calls go through `router` (a single server or a cluster), which must outlive the store.
    ClaimStore(RedisRouter& router, std::string key_prefix, std::string group, std::string owner);
    // A single server through `redis` (borrowed; it must outlive the store).
    ClaimStore(RedisConnection& redis, std::string key_prefix, std::string group,
               std::string owner);

    // One result per key, in order. When a call fails as a whole, the claims the
    // other calls acquired are released (best effort) before it throws: the
    // caller, told nothing, could neither settle nor renew them.
    std::vector<ClaimResult> claim(const std::vector<std::string>& keys,
                                   std::chrono::milliseconds lease);
    std::vector<FinishStatus> extend(const std::vector<TokenRequest>& claims,
                                     std::chrono::milliseconds lease);
    // extend() for the claims of several owners (each its own), in one round
    // trip per node: the statuses of each owner's claims, in order. Throws
    // RedisError (a call refused as a whole included: nothing is known then).
    std::vector<std::vector<FinishStatus>> extend_owned(const std::vector<OwnedClaims>& owned,
                                                        std::chrono::milliseconds lease);
    std::vector<FinishStatus> complete(const std::vector<CompleteRequest>& requests,
                                       std::chrono::milliseconds ttl);
    std::vector<FinishStatus> release(const std::vector<TokenRequest>& claims);

    const std::string& owner() const { return owner_; }
    std::string redis_key(const std::string& idempotency_key) const;

private:
    // The RedisConnection form: `own_router` wraps the connection and lives as long.
    ClaimStore(std::unique_ptr<RedisRouter> own_router, std::string key_prefix, std::string group,
               std::string owner);

    // Destruction order: router_ may refer to own_router_.
    std::unique_ptr<RedisRouter> own_router_;  // set for a borrowed RedisConnection
    RedisRouter& router_;
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
