#include "runtime/sessions/redis_session.hpp"

#include "redis/redis_error.hpp"

namespace exo {

RedisOptions redis_options(const RedisConfig& rc) {
    RedisOptions out;
    out.host = rc.host;
    out.port = rc.port;
    out.username = rc.username;
    out.password = rc.password;
    out.db = rc.db;
    out.connect_timeout = rc.connect_timeout;
    out.command_timeout = rc.command_timeout;
    return out;
}

std::unique_ptr<RedisRouter> open_redis(const RedisConfig& rc) {
    if (rc.cluster.empty()) return std::make_unique<RedisRouter>(redis_options(rc));
    return std::make_unique<RedisRouter>(redis_options(rc), rc.cluster);
}

RedisSession::RedisSession(const ClaimConfig& claim, const RedisConfig& redis, std::string group,
                           std::string owner, spdlog::logger& log,
                           std::function<std::chrono::milliseconds(int)> backoff)
    : claim_(claim),
      redis_config_(redis),
      group_(std::move(group)),
      owner_(std::move(owner)),
      log_(log),
      backoff_(std::move(backoff)) {}

ClaimStore* RedisSession::claims() {
    // The one place a worker opens Redis: with claim.store: postgres it never does.
    if (!claim_.in_redis()) return nullptr;
    if (claims_) return &*claims_;
    if (std::chrono::steady_clock::now() < retry_at_) return nullptr;
    try {
        redis_ = open_redis(redis_config_);
        claims_.emplace(*redis_, redis_config_.key_prefix, group_, owner_);
        if (down_logged_) log_.info("Redis is reachable again");
        down_logged_ = false;
        return &*claims_;
    } catch (const RedisError& e) {
        failed();
        if (!down_logged_) log_.warn("Redis unreachable: {}", e.what());
        down_logged_ = true;
        return nullptr;
    }
}

void RedisSession::failed() {
    ++failures_;
    // Dropping a healthy connection would only add a reconnect to the outage.
    if (redis_ && redis_->connected()) return;
    claims_.reset();
    redis_.reset();
    retry_at_ = std::chrono::steady_clock::now() + backoff_(failures_);
}

}  // namespace exo
