#include "pipeline/lease_keeper.hpp"

#include <algorithm>
#include <optional>

#include "pipeline/redis_session.hpp"
#include "redis/redis_error.hpp"

namespace exo {
namespace {

// extend.lua on a connection of the keeper's own. Shared state: std::function
// copies its target, and the connection cannot be copied.
LeaseKeeper::Extend redis_extend(const Config& config, std::string owner) {
    struct Redis {
        std::unique_ptr<RedisRouter> connection;
        std::optional<ClaimStore> store;
    };
    auto redis = std::make_shared<Redis>();
    return [&config, owner = std::move(owner), redis](const std::vector<TokenRequest>& claims) {
        try {
            if (!redis->store) {
                const auto& rc = config.redis;
                redis->connection = open_redis(rc);
                redis->store.emplace(*redis->connection, rc.key_prefix, config.kafka.group_id,
                                     owner);
            }
            return redis->store->extend(claims, config.claim.lease);
        } catch (const RedisError&) {
            // An error reply leaves the connection in step: only a closed one goes.
            if (!redis->connection || !redis->connection->connected()) {
                redis->store.reset();
                redis->connection.reset();
            }
            throw;
        }
    };
}

}  // namespace

LeaseKeeper::LeaseKeeper(const Config& config, std::string owner, PipelineStats& stats,
                         std::shared_ptr<spdlog::logger> log)
    : LeaseKeeper(config, stats, std::move(log), redis_extend(config, std::move(owner))) {}

LeaseKeeper::LeaseKeeper(const Config& config, PipelineStats& stats,
                         std::shared_ptr<spdlog::logger> log, Extend extend)
    : config_(config), stats_(stats), log_(std::move(log)), extend_(std::move(extend)) {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

LeaseKeeper::~LeaseKeeper() {
    thread_.request_stop();
    changed_.notify_all();
}

void LeaseKeeper::start_batch() {
    std::lock_guard lock(mutex_);
    abandoned_ = false;
}

void LeaseKeeper::hold(std::vector<TokenRequest> claims) {
    {
        std::lock_guard lock(mutex_);
        // Checked under the lock abandon() takes: an abandon() between the
        // worker's claim step and its hold() must stick.
        if (abandoned_) return;
        claims_ = std::move(claims);
        ++generation_;
    }
    changed_.notify_all();
}

void LeaseKeeper::abandon() {
    {
        std::lock_guard lock(mutex_);
        abandoned_ = true;
        claims_.clear();
        ++generation_;
    }
    changed_.notify_all();
}

std::vector<TokenRequest> LeaseKeeper::held() {
    std::lock_guard lock(mutex_);
    return claims_;
}

bool LeaseKeeper::holds(const TokenRequest& claim) const {
    return std::any_of(claims_.begin(), claims_.end(), [&](const TokenRequest& held) {
        return held.token == claim.token && held.key == claim.key;
    });
}

void LeaseKeeper::run(std::stop_token stop) {
    const auto period = std::max(config_.claim.lease / 3, std::chrono::milliseconds(10));
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
        // Wait until there is something to hold, then one period: a batch that
        // finishes within a third of the lease never costs a renewal.
        changed_.wait(lock, stop, [&] { return !claims_.empty(); });
        auto seen = generation_;
        if (changed_.wait_for(lock, stop, period, [&] { return generation_ != seen; })) continue;
        if (stop.stop_requested()) break;
        auto claims = claims_;
        lock.unlock();
        renew(claims);
        lock.lock();
    }
}

void LeaseKeeper::renew(const std::vector<TokenRequest>& claims) {
    std::vector<FinishStatus> statuses;
    try {
        statuses = extend_(claims);
    } catch (const RedisError& e) {
        log_->warn("could not renew {} leases: {}", claims.size(), e.what());
        return;
    }
    // Judged now, not when the renewal was sent: a claim the worker let go of
    // meanwhile was finished on purpose, and its LOST is the worker's doing.
    std::vector<const TokenRequest*> lost;
    {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < statuses.size() && i < claims.size(); ++i)
            if (statuses[i] == FinishStatus::lost && holds(claims[i])) lost.push_back(&claims[i]);
    }
    stats_.lease_renewals += claims.size();
    for (const auto* claim : lost) {
        stats_.leases_lost++;
        log_->warn(
            "lease of '{}' was taken over while its handler ran; the dedup row decides which "
            "transaction wins",
            claim->key);
    }
}

}  // namespace exo
