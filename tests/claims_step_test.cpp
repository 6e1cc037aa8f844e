// The claims step (protocol/steps/claims.hpp) on connections handed to it
// (protocol/session_access.hpp), without servers: what it does when Redis is
// down, and that it lets go of a claim's lease before it finishes the claim.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/fate_policy.hpp"
#include "protocol/session_access.hpp"
#include "protocol/steps/claims.hpp"
#include "redis/redis_error.hpp"

namespace {

// Redis down: no claim store, every time. Says what the step asked of it, in order.
struct RedisDown final : exo::ClaimAccess {
    std::vector<std::string>* events;
    explicit RedisDown(std::vector<std::string>& log) : events(&log) {}
    exo::ClaimStore* claims() override {
        events->push_back("claims");
        return nullptr;
    }
    void failed() override { events->push_back("failed"); }
    void answered() override { events->push_back("answered"); }
    std::uint64_t round_trips() const override { return 0; }
};

struct HeldLeases final : exo::ClaimLeases {
    std::vector<std::string>* events;
    explicit HeldLeases(std::vector<std::string>& log) : events(&log) {}
    void hold(std::vector<exo::TokenRequest> claims) override {
        std::string held = "hold";
        for (const auto& claim : claims)
            held += " " + claim.key + "/" + std::to_string(claim.token.value);
        events->push_back(held);
    }
};

struct Step {
    exo::ClaimConfig claim;
    exo::PipelineConfig pipeline;
    exo::PipelineStats stats{{"payments"}};
    std::shared_ptr<spdlog::logger> log = spdlog::default_logger()->clone("claims-step-test");
    exo::FatePolicy fate{pipeline, stats, *log};
    std::vector<std::string> events;
    RedisDown redis{events};
    HeldLeases leases{events};

    exo::Claims claims(exo::RedisDownPolicy on_redis_down) {
        return exo::Claims(claim, on_redis_down, redis, stats, *log, fate);
    }
};

// Records taken from payments-0, offsets 0.. .
std::vector<exo::PendingRecord> taken(std::size_t count) {
    std::vector<exo::PendingRecord> records(count);
    for (std::size_t n = 0; n < count; ++n) {
        records[n].record.topic = exo::Topic{"payments"};
        records[n].record.offset = exo::Offset{static_cast<std::int64_t>(n)};
    }
    return records;
}

void set_keys(exo::Batch& batch, const std::vector<std::string>& keys) {
    std::size_t n = 0;
    for (auto& record : batch) record.key = keys.at(n++);
}

}  // namespace

TEST_CASE(
    "with Redis down, the claims step pauses the batch under on_redis_down: pause and lets it "
    "run unclaimed under postgres_only") {
    Step step;
    exo::Batch batch(taken(2));
    set_keys(batch, {"a", "b"});
    auto pausing = step.claims(exo::RedisDownPolicy::pause);
    CHECK_THROWS_AS(pausing.claim(batch), exo::RedisIoError);
    auto degraded = step.claims(exo::RedisDownPolicy::postgres_only);
    CHECK_NOTHROW(degraded.claim(batch));
    for (const auto& record : batch) {
        CHECK(record.is_pending());  // each goes to its transaction: the dedup row decides
        CHECK_FALSE(record.token.has_value());
    }
    CHECK(step.events == std::vector<std::string>{"claims", "claims"});
}

TEST_CASE(
    "the claims step lets go of a finished record's lease before it completes the claim, and "
    "keeps the open ones held") {
    Step step;
    exo::Batch batch(taken(2));
    set_keys(batch, {"done", "open"});
    auto it = batch.begin();
    it->token = exo::FencingToken{7};
    it->finish(exo::Outcome::applied, "ok");
    (++it)->token = exo::FencingToken{8};
    auto claims = step.claims(exo::RedisDownPolicy::pause);
    claims.complete(batch, step.leases);
    // The renewer holds only "open" before Redis is asked: a LOST for "done" read
    // after this is the complete's own, never a lease lost under a running handler.
    CHECK(step.events == std::vector<std::string>{"hold open/8", "claims"});
    CHECK_FALSE(batch.begin()->token.has_value());  // settled one way or the other
    step.events.clear();
    claims.release(batch);  // with Redis down, the last claim just expires
    CHECK(step.events == std::vector<std::string>{"claims"});
    CHECK(batch.open_claims().empty());
}
