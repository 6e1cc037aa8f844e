// Whoever can write under the claim prefix can answer DUPLICATE for a key that
// never ran (docs/operations.md, Security). claim.verify_duplicates takes such an
// answer to PostgreSQL's dedup row before skipping the record (issue 31, item 10).
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "pipeline_harness.hpp"
#include "records.hpp"
#include "redis/redis_connection.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

namespace {

// What a writer to Redis leaves: a COMPLETED claim for a key exo never applied.
void forge_completed_claim(const exo::Config& config, const std::string& key) {
    exo::RedisConnection redis(exo::testing::redis_options());
    const auto reply =
        redis.command({"HSET", config.redis.key_prefix + ":" + config.kafka.group_id + ":" + key,
                       "state", "COMPLETED", "result", "forged"});
    REQUIRE(reply.type != exo::RedisReply::Type::error);
}

}  // namespace

TEST_CASE(
    "by default a forged Redis COMPLETED claim makes exo skip a record that never ran, which "
    "is why Redis write access is a credential") {
    PipelineHarness h({.name = "forged_off", .partitions = 1, .concurrency = 1});
    forge_completed_claim(h.config(), "f-1");
    h.produce({payment("f-1", "acc-1", 100, 1), payment("f-2", "acc-2", 20, 1)});

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-2", 20}});
    CHECK(daemon.stats().duplicates_redis == 1);
    CHECK(daemon.stats().redis_duplicates_verified == 0);
}

TEST_CASE(
    "with claim.verify_duplicates a forged Redis COMPLETED claim is caught by the missing "
    "dedup row: the record is applied once and the contradiction counted, while a real "
    "duplicate stays a duplicate") {
    PipelineHarness h({.name = "forged_on", .partitions = 1, .concurrency = 1});
    exo::Config config = h.config();
    config.claim.verify_duplicates = true;
    forge_completed_claim(config, "f-1");
    h.produce({payment("f-1", "acc-1", 100, 1), payment("f-2", "acc-2", 20, 1)});

    RunningDaemon daemon(config, h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    // A genuine redelivery of each: Redis says DUPLICATE, and the dedup rows agree.
    h.produce({payment("f-1", "acc-1", 100, 1), payment("f-2", "acc-2", 20, 1)});
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 100}, {"acc-2", 20}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 2);
    const auto& s = daemon.stats();
    CHECK(s.applied == 2);
    CHECK(s.redis_duplicates_contradicted == 1);
    CHECK(s.redis_duplicates_verified == 3);  // the forged one and both redeliveries
    CHECK(s.duplicates_postgres == 2);
    CHECK(s.duplicates_redis == 0);
}
