#include <doctest/doctest.h>

#include "observability/health.hpp"

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
    s.workers = {{0, true, std::nullopt}, {1, true, kNow - 2s}};
    s.partitions.push_back({exo::TopicPartition{exo::Topic{"t"}, exo::Partition{0}}});
    return s;
}

}  // namespace

TEST_CASE("a running daemon whose loop and workers turned recently is live and ready") {
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

TEST_CASE("a worker on one batch past the bound is not live; an idle worker never is stuck") {
    auto s = running();
    s.workers[1].busy_since = kNow - 90s;
    auto v = exo::liveness(s, kNow, kBound);
    CHECK_FALSE(v.ok);
    CHECK(v.reason.find("worker 1") != std::string::npos);
    s.workers[1].busy_since.reset();
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

TEST_CASE("readiness fails for Kafka down, an unhealthy worker or a stalled partition") {
    auto kafka = running();
    kafka.kafka_up = false;
    CHECK(exo::readiness(kafka, kNow, kBound).reason.find("Kafka") != std::string::npos);
    auto worker = running();
    worker.workers[0].healthy = false;
    CHECK(exo::readiness(worker, kNow, kBound).reason.find("worker 0") != std::string::npos);
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
