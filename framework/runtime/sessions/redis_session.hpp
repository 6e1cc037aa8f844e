#pragma once
// One batch runner's Redis: its connection and claim store, opened when first needed,
// forgotten on any failure and reopened after a backoff. An outage is logged
// once when it starts and once when it ends, not once per retry.
//
// Thread-safety: none; one batch runner's thread (BatchProtocol).
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "protocol/session_access.hpp"
#include "redis/claim_store.hpp"
#include "redis/redis_connection.hpp"
#include "redis/redis_router.hpp"

namespace exo {

// How every exo Redis connection (batch runners, the lease keeper, operator commands)
// reaches Redis: the one place the redis section becomes connection options.
RedisOptions redis_options(const RedisConfig& redis);
// The router to the server or cluster the redis section names (redis.cluster).
// Throws like RedisRouter's constructors.
std::unique_ptr<RedisRouter> open_redis(const RedisConfig& redis);

class RedisSession final : public ClaimAccess {
public:
    // `claim` (whether claims are kept in Redis at all) and `redis` outlive the
    // session; `group` is kafka.group_id, the claims' namespace. `backoff(n)` is the
    // wait after the n-th failure in a row.
    RedisSession(const ClaimConfig& claim, const RedisConfig& redis, std::string group,
                 std::string owner, spdlog::logger& log,
                 std::function<std::chrono::milliseconds(int)> backoff);

    // The claim store, connecting first if the backoff has passed; nullptr while
    // Redis is down, and always with claim.store: postgres (no connection is
    // ever attempted, so no failure is counted). Never throws.
    ClaimStore* claims() override;
    // The claim store only if connected now; never connects.
    ClaimStore* connected() { return claims_ ? &*claims_ : nullptr; }
    // A call failed: counted for the backoff. A connection an I/O failure
    // closed is forgotten and claims() waits out the backoff; one that only
    // carried an error reply (Redis answered) is kept.
    void failed() override;
    // A round trip answered: the backoff starts over.
    void answered() override { failures_ = 0; }
    // Failures in a row, for the batch's own backoff.
    int failures() const { return failures_; }
    // Round trips of the current connection (0 without one).
    std::uint64_t round_trips() const override { return redis_ ? redis_->round_trips() : 0; }

private:
    const ClaimConfig& claim_;
    const RedisConfig& redis_config_;
    std::string group_;
    std::string owner_;
    spdlog::logger& log_;
    std::function<std::chrono::milliseconds(int)> backoff_;
    // Destruction order: the claim store refers to the router.
    std::unique_ptr<RedisRouter> redis_;
    std::optional<ClaimStore> claims_;
    std::chrono::steady_clock::time_point retry_at_{};
    int failures_ = 0;
    bool down_logged_ = false;
};

}  // namespace exo
