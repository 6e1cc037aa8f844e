#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "observability/health.hpp"
#include "observability/status_json.hpp"

using namespace std::chrono_literals;
using exo::DaemonStatus;

namespace {

const auto kNow = DaemonStatus::Clock::time_point(1000s);
constexpr auto kBound = 60s;

DaemonStatus running() {
    DaemonStatus s;
    s.running = true;
    s.last_poll = kNow - 1s;
    s.joined = true;
    s.kafka_up = true;
    s.runners = {{0, std::nullopt}, {1, kNow - 2s}};
    s.partitions.push_back({exo::TopicPartition{exo::Topic{"t"}, exo::Partition{0}}});
    return s;
}

}  // namespace

TEST_CASE("a running daemon whose loop and batch runners turned recently is live and ready") {
    auto s = running();
    CHECK(exo::liveness(s, kNow, kBound).ok);
    CHECK(exo::readiness(s, kNow, kBound).ok);
}

TEST_CASE("a poll loop that has not turned within the bound is not live, and says so") {
    auto s = running();
    s.last_poll = kNow - 61s;
    auto v = exo::liveness(s, kNow, kBound);
    CHECK_FALSE(v.ok);
    CHECK(v.reason.find("poll loop last turned 61000 ms ago") != std::string::npos);
    CHECK_FALSE(exo::readiness(s, kNow, kBound).ok);
}

TEST_CASE("a batch runner on one batch past the bound is not live; an idle runner never is stuck") {
    auto s = running();
    s.runners[1].busy_since = kNow - 90s;
    auto v = exo::liveness(s, kNow, kBound);
    CHECK_FALSE(v.ok);
    CHECK(v.reason.find("batch runner 1 has been on one batch for 90000 ms") != std::string::npos);
    s.runners[1].busy_since.reset();
    CHECK(exo::liveness(s, kNow, kBound).ok);
}

TEST_CASE("a member with no partitions is ready once it joined: spares do not block a deploy") {
    auto s = running();
    s.partitions.clear();
    CHECK(exo::readiness(s, kNow, kBound).ok);
    s.joined = false;
    auto v = exo::readiness(s, kNow, kBound);
    CHECK_FALSE(v.ok);
    CHECK(v.reason.find("not yet joined") != std::string::npos);
    CHECK(exo::liveness(s, kNow, kBound).ok);  // joining takes time: still live
}

TEST_CASE("readiness fails for Kafka down, unhealthy batch runners or a stalled partition") {
    auto kafka = running();
    kafka.kafka_up = false;
    CHECK(exo::readiness(kafka, kNow, kBound).reason.find("Kafka") != std::string::npos);
    auto runners = running();
    runners.pipeline_healthy = false;
    CHECK(exo::readiness(runners, kNow, kBound).reason.find("batch runners are not healthy") !=
          std::string::npos);
    auto stalled = running();
    stalled.partitions[0].stalled = true;
    CHECK(exo::readiness(stalled, kNow, kBound).reason.find("t[0] is stalled") !=
          std::string::npos);
    // Redis alone does not decide readiness (on_redis_down: postgres_only keeps going).
    auto redis = running();
    redis.redis_up = false;
    CHECK(exo::readiness(redis, kNow, kBound).ok);
}

TEST_CASE("a daemon that is not running is neither live nor ready") {
    DaemonStatus s;
    CHECK_FALSE(exo::liveness(s, kNow, kBound).ok);
    CHECK_FALSE(exo::readiness(s, kNow, kBound).ok);
}

TEST_CASE("the liveness bound covers a revoke's drain and a few leases, at least a minute") {
    CHECK(exo::liveness_bound(10s, 30s) == 120s);
    CHECK(exo::liveness_bound(45s, 5s) == 90s);
    CHECK(exo::liveness_bound(1s, 1s) == 60s);
}

TEST_CASE(
    "/status lists one workers entry per batch runner, each with its busy time and the "
    "pipeline's one health") {
    auto s = running();
    s.pipeline_healthy = false;
    const exo::HealthVerdict ok{true, {}};
    const auto json = nlohmann::json::parse(exo::status_json(s, ok, ok, kNow));
    REQUIRE(json["workers"].size() == 2);
    CHECK(json["workers"][0]["index"] == 0);
    CHECK(json["workers"][0]["busy_ms"].is_null());
    CHECK(json["workers"][0]["healthy"] == false);
    CHECK(json["workers"][1]["index"] == 1);
    CHECK(json["workers"][1]["busy_ms"] == 2000);
    CHECK(json["workers"][1]["healthy"] == false);
}
