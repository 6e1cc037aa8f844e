#pragma once
// The operator's view of a key's Redis claim (docs/design.md#redis-claim-record-and-scripts): read
// it as it is, or drop it for a replay. Not the daemon's protocol: these calls do not go through
// the claim scripts, because they neither take nor settle a claim. Throws RedisError like
// RedisRouter.
#include <optional>
#include <string>

#include "ops/ops_records.hpp"
#include "redis/redis_router.hpp"

namespace exo {

// The claim hash and its remaining TTL; nullopt if Redis holds none (never
// claimed, expired, flushed: the dedup row still decides).
std::optional<ClaimView> read_claim(RedisRouter& redis, const std::string& redis_key);

// Deletes the claim whatever its state. Replay needs exactly this: a claim left
// DEAD_LETTERED would answer the replayed record without asking PostgreSQL, and
// a worker that settles a claim after this finds it gone and gets LOST
// (complete.lua), so it cannot put DEAD_LETTERED back.
void forget_claim(RedisRouter& redis, const std::string& redis_key);

}  // namespace exo
