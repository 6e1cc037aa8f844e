// redis.username: exo authenticating as a Redis 6+ ACL user (AUTH <username>
// <password>) on every connection it opens, against the real Redis of
// scripts/services.sh. The ACL user may touch only keys under the harness's
// claim prefix: what docs propose for protecting the claims.
#include <doctest/doctest.h>

#include <string>

#include "app/operator_setup.hpp"
#include "pipeline_harness.hpp"
#include "redis/redis_connection.hpp"
#include "runtime/sessions/redis_session.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

namespace {

constexpr const char* kPassword = "longpassword123";

// An ACL user for one test, removed (with its connections) when the test ends.
class AclUser {
public:
    AclUser(std::string name, const std::string& key_pattern)
        : admin_(exo::testing::redis_options()), name_(std::move(name)) {
        const auto reply =
            admin_.command({"ACL", "SETUSER", name_, "reset", "on", std::string(">") + kPassword,
                            key_pattern, "&*", "+@all"});
        REQUIRE_MESSAGE(reply.type == exo::RedisReply::Type::status, reply.str);
    }
    ~AclUser() { admin_.command({"ACL", "DELUSER", name_}); }
    AclUser(const AclUser&) = delete;
    AclUser& operator=(const AclUser&) = delete;
    const std::string& name() const { return name_; }

private:
    exo::RedisConnection admin_;
    std::string name_;
};

}  // namespace

TEST_SUITE("redis acl") {
    TEST_CASE(
        "a daemon configured with redis.username and redis.password applies every record as that "
        "ACL user, keeping to keys under its claim prefix") {
        PipelineHarness h({.name = "acl"});
        const AclUser user(exo::testing::unique_name("exo-acl"),
                           "~" + h.config().redis.key_prefix + ":*");
        exo::Config config = h.config();
        config.redis.username = user.name();
        config.redis.password = kPassword;

        auto workload = exo::generate_payments(
            {.count = 300, .accounts = 20, .duplicate_ratio = 0.2, .partitions = 4, .seed = 31});
        h.produce(workload);
        {
            RunningDaemon daemon(config, h.registry(), h.bootstrap());
            REQUIRE(h.wait_until_consumed(90s));
            daemon.stop();
            const auto& s = daemon.stats();
            CHECK(s.applied == workload.unique_events);
            CHECK(s.duplicates() == workload.duplicates);
            CHECK(s.dead_lettered == 0);
        }
        h.check_exactly_once(workload);
        // The operator commands (exo inspect, exo dlq replay) open Redis the same way.
        exo::RedisConnection op(exo::operator_redis(config.redis));
        CHECK(op.command({"ACL", "WHOAMI"}).str == user.name());
    }

    TEST_CASE(
        "a wrong redis.password for a redis.username is refused at connect with a message naming "
        "the user and redis.username, never the password") {
        const AclUser user(exo::testing::unique_name("exo-acl"), "~*");
        exo::RedisConfig rc;
        const auto base = exo::testing::redis_options();
        rc.host = base.host;
        rc.port = base.port;
        rc.username = user.name();
        rc.password = "not-the-longpassword123";
        std::string message;
        try {
            exo::RedisConnection redis(exo::redis_options(rc));
            FAIL("AUTH with a wrong password was accepted");
        } catch (const exo::RedisReplyError& e) {
            message = e.what();
        }
        CAPTURE(message);
        CHECK(message.find("AUTH as ACL user '" + user.name() + "'") != std::string::npos);
        CHECK(message.find("redis.username") != std::string::npos);
        CHECK(message.find("WRONGPASS") != std::string::npos);
        CHECK(message.find("not-the-longpassword123") == std::string::npos);

        // The right password for a user name that does not exist: refused the same way.
        rc.username = user.name() + "-missing";
        rc.password = kPassword;
        CHECK_THROWS_WITH_AS(exo::RedisConnection(exo::redis_options(rc)),
                             doctest::Contains("redis.username"), exo::RedisReplyError);
    }
}
