#include "pipeline/lease_keeper.hpp"

#include "redis/redis_error.hpp"

namespace exo {

LeaseKeeper::LeaseKeeper(const Config& config, std::string owner, PipelineStats& stats,
                         std::shared_ptr<spdlog::logger> log)
    : config_(config), owner_(std::move(owner)), stats_(stats), log_(std::move(log)) {
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
    try {
        if (!store_) {
            const auto& rc = config_.redis;
            redis_.emplace(RedisOptions{rc.host, rc.port, rc.password, rc.db, rc.connect_timeout,
                                        rc.command_timeout});
            store_.emplace(*redis_, rc.key_prefix, config_.kafka.group_id, owner_);
        }
        auto statuses = store_->extend(claims, config_.claim.lease);
        stats_.lease_renewals += claims.size();
        for (std::size_t i = 0; i < statuses.size(); ++i)
            if (statuses[i] == FinishStatus::lost) {
                stats_.leases_lost++;
                log_->warn(
                    "lease of '{}' was taken over while its handler ran; the dedup row "
                    "decides which transaction wins",
                    claims[i].key);
            }
    } catch (const RedisError& e) {
        // An error reply leaves the connection in step: only a closed one goes.
        if (!redis_ || !redis_->connected()) {
            store_.reset();
            redis_.reset();
        }
        log_->warn("could not renew {} leases: {}", claims.size(), e.what());
    }
}

}  // namespace exo
