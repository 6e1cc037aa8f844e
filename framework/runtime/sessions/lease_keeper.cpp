#include "runtime/sessions/lease_keeper.hpp"

#include <algorithm>
#include <optional>

#include "redis/redis_error.hpp"
#include "runtime/sessions/redis_session.hpp"

namespace exo {
namespace {

// extend.lua on a connection of the renewer's own. Shared state: std::function
// copies its target, and the connection cannot be copied.
LeaseRenewer::Extend redis_extend(const RedisConfig& rc, std::chrono::milliseconds lease,
                                  std::string group) {
    struct Redis {
        std::unique_ptr<RedisRouter> connection;
        std::optional<ClaimStore> store;
    };
    auto redis = std::make_shared<Redis>();
    return [&rc, lease, group = std::move(group), redis](const std::vector<OwnedClaims>& owned) {
        try {
            if (!redis->store) {
                redis->connection = open_redis(rc);
                // The owner is each claim's (extend_owned); this one is unused.
                redis->store.emplace(*redis->connection, rc.key_prefix, group,
                                     std::string("lease-renewer"));
            }
            return redis->store->extend_owned(owned, lease);
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

LeaseRenewer::LeaseRenewer(const RedisConfig& redis, std::chrono::milliseconds lease,
                           std::string group, PipelineStats& stats,
                           std::shared_ptr<spdlog::logger> log)
    : LeaseRenewer(lease, stats, std::move(log), redis_extend(redis, lease, std::move(group))) {}

LeaseRenewer::LeaseRenewer(std::chrono::milliseconds lease, PipelineStats& stats,
                           std::shared_ptr<spdlog::logger> log, Extend extend)
    : stats_(stats),
      log_(std::move(log)),
      extend_(std::move(extend)),
      period_(std::max(lease / 3, std::chrono::milliseconds(10))) {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

LeaseRenewer::~LeaseRenewer() {
    thread_.request_stop();
    changed_.notify_all();
}

bool LeaseRenewer::holds(std::uint64_t id, const TokenRequest& claim) const {
    const auto it = keepers_.find(id);
    if (it == keepers_.end()) return false;
    const auto& claims = it->second.claims;
    return std::any_of(claims.begin(), claims.end(), [&](const TokenRequest& held) {
        return held.token == claim.token && held.key == claim.key;
    });
}

void LeaseRenewer::run(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
        // The earliest renewal due among the keepers that hold claims.
        std::optional<Clock::time_point> earliest;
        for (const auto& [id, held] : keepers_)
            if (!held.claims.empty() && (!earliest || held.due < *earliest)) earliest = held.due;
        const auto seen = version_;
        if (!earliest) {
            changed_.wait(lock, stop, [&] { return version_ != seen; });
            continue;
        }
        if (Clock::now() < *earliest) {
            // A hold, an abandon or a new keeper moves the due times: look again.
            changed_.wait_until(lock, stop, *earliest, [&] { return version_ != seen; });
            continue;
        }
        // Every keeper due now or within half a period: one round trip for all.
        const auto now = Clock::now();
        std::vector<std::uint64_t> ids;
        std::vector<OwnedClaims> due;
        for (auto& [id, held] : keepers_) {
            if (held.claims.empty() || held.due > now + period_ / 2) continue;
            ids.push_back(id);
            due.push_back({held.owner, held.claims});
            held.due = now + period_;
        }
        lock.unlock();
        renew(ids, due);
        lock.lock();
    }
}

void LeaseRenewer::renew(const std::vector<std::uint64_t>& ids,
                         const std::vector<OwnedClaims>& due) {
    std::size_t claims = 0;
    for (const auto& d : due) claims += d.claims.size();
    std::vector<std::vector<FinishStatus>> statuses;
    try {
        statuses = extend_(due);
    } catch (const RedisError& e) {
        log_->warn("could not renew {} leases: {}", claims, e.what());
        return;
    }
    // Judged now, not when the renewal was sent: a claim the worker let go of
    // meanwhile was finished on purpose, and its LOST is the worker's doing.
    std::vector<const TokenRequest*> lost;
    {
        std::lock_guard lock(mutex_);
        for (std::size_t k = 0; k < statuses.size() && k < due.size(); ++k)
            for (std::size_t i = 0; i < statuses[k].size() && i < due[k].claims.size(); ++i)
                if (statuses[k][i] == FinishStatus::lost && holds(ids[k], due[k].claims[i]))
                    lost.push_back(&due[k].claims[i]);
    }
    stats_.lease_renewals += claims;
    for (const auto* claim : lost) {
        stats_.leases_lost++;
        log_->warn(
            "lease of '{}' was taken over while its handler ran; the dedup row decides which "
            "transaction wins",
            claim->key);
    }
}

LeaseKeeper::LeaseKeeper(LeaseRenewer& renewer, std::string owner)
    : renewer_(renewer), id_([&] {
          std::lock_guard lock(renewer.mutex_);
          const auto id = renewer.next_id_++;
          renewer.keepers_.emplace(id, LeaseRenewer::Held{std::move(owner), {}, false, {}});
          return id;
      }()) {}

LeaseKeeper::~LeaseKeeper() {
    {
        std::lock_guard lock(renewer_.mutex_);
        renewer_.keepers_.erase(id_);
        ++renewer_.version_;
    }
    renewer_.changed_.notify_all();
}

void LeaseKeeper::start_batch() {
    std::lock_guard lock(renewer_.mutex_);
    renewer_.keepers_.at(id_).abandoned = false;
}

void LeaseKeeper::hold(std::vector<TokenRequest> claims) {
    {
        std::lock_guard lock(renewer_.mutex_);
        auto& held = renewer_.keepers_.at(id_);
        // Checked under the lock abandon() takes: an abandon() between the
        // worker's claim step and its hold() must stick.
        if (held.abandoned) return;
        held.claims = std::move(claims);
        // Renewed once held unchanged for a period.
        held.due = LeaseRenewer::Clock::now() + renewer_.period_;
        ++renewer_.version_;
    }
    renewer_.changed_.notify_all();
}

void LeaseKeeper::abandon() {
    {
        std::lock_guard lock(renewer_.mutex_);
        auto& held = renewer_.keepers_.at(id_);
        held.abandoned = true;
        held.claims.clear();
        ++renewer_.version_;
    }
    renewer_.changed_.notify_all();
}

std::vector<TokenRequest> LeaseKeeper::held() {
    std::lock_guard lock(renewer_.mutex_);
    return renewer_.keepers_.at(id_).claims;
}

}  // namespace exo
