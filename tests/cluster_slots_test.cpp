// redis/cluster_slots.hpp and the cluster key layout of redis/claim_store.hpp,
// without a server: the slot of a key as Redis computes it, the slot map read
// from CLUSTER SLOTS, MOVED/ASK replies, and claim keys that share a slot per
// (group, bucket). Config: redis.cluster parsed, refused beside host/port, printed.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "config/config_printer.hpp"
#include "redis/claim_store.hpp"
#include "redis/cluster_slots.hpp"
#include "redis/redis_error.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

namespace {

RedisReply integer(long long n) {
    return {RedisReply::Type::integer, "", n, {}};
}
RedisReply text(std::string s) {
    return {RedisReply::Type::string, std::move(s), 0, {}};
}
RedisReply array(std::vector<RedisReply> elements) {
    return {RedisReply::Type::array, "", 0, std::move(elements)};
}
RedisReply error(std::string s) {
    return {RedisReply::Type::error, std::move(s), 0, {}};
}
RedisReply range(int first, int last, std::string host, int port) {
    return array({integer(first), integer(last), array({text(host), integer(port), text("id")}),
                  array({text("127.0.0.1"), integer(port + 100), text("replica-id")})});
}

}  // namespace

TEST_SUITE("redis cluster routing") {
    TEST_CASE("key_hash_slot answers what Redis' CLUSTER KEYSLOT answers") {
        // Every expected slot below was answered by `redis-cli CLUSTER KEYSLOT <key>`
        // on a throw-away `redis-server --cluster-enabled yes` (Debian 12's Redis
        // 7.0.15), not computed by exo.
        struct Case {
            const char* key;
            int slot;
        };
        const Case cases[] = {
            {"", 0},
            {"foo", 12182},
            {"bar", 5061},
            {"hello", 866},
            {"123456789", 12739},
            {"{user1000}.following", 3443},
            {"{user1000}.followers", 3443},
            {"foo{}{bar}", 8363},     // "{}" is no tag: the whole key is hashed
            {"foo{{bar}}zap", 4015},  // the tag is "{bar": from the first '{' to the first '}'
            {"foo{bar}{zap}", 5061},  // the first tag only: same as "bar"
            {"{}foo", 9500},
            {"a{b", 13340},    // '{' without '}': the whole key
            {"a}b{c}", 7365},  // a '}' before the '{' does not count: the tag is "c"
            {"{", 4092},
            {"}{x}", 16287},
            {"exo:{billing:07}:k1", 6702},
            {"exo:{g:00}:x", 14685},
        };
        for (const auto& c : cases) {
            CAPTURE(c.key);
            CHECK(key_hash_slot(c.key) == c.slot);
        }
    }

    TEST_CASE("crc16 is CRC16-XMODEM: 0x31C3 for 123456789") {
        CHECK(crc16("123456789") == 0x31C3);  // the check value of the XMODEM parameters
        CHECK(crc16("") == 0);
    }

    TEST_CASE("a CLUSTER SLOTS reply becomes a map from every slot to its master") {
        const SlotMap map = SlotMap::parse(
            array({range(0, 5460, "10.0.0.1", 7000), range(5461, 10922, "10.0.0.2", 7001),
                   range(10923, 16383, "10.0.0.3", 7002)}),
            "10.0.0.1");
        CHECK(map.covered() == 16384);
        REQUIRE(map.masters().size() == 3);
        CHECK(*map.master(0) == ClusterNode{"10.0.0.1", 7000});
        CHECK(*map.master(5460) == ClusterNode{"10.0.0.1", 7000});
        CHECK(*map.master(5461) == ClusterNode{"10.0.0.2", 7001});
        CHECK(*map.master(16383) == ClusterNode{"10.0.0.3", 7002});
        CHECK(map.master(16384) == nullptr);
        CHECK(map.master(-1) == nullptr);
    }

    TEST_CASE("a master serving several ranges is one node, and unserved slots have none") {
        const SlotMap map = SlotMap::parse(
            array({range(0, 99, "h", 1), range(200, 299, "h", 1), range(100, 149, "g", 2)}), "h");
        CHECK(map.masters().size() == 2);
        CHECK(map.covered() == 250);
        CHECK(map.master(150) == nullptr);
        CHECK(*map.master(250) == ClusterNode{"h", 1});
    }

    TEST_CASE("a master without an address is reached where it was asked") {
        const SlotMap map = SlotMap::parse(array({range(0, 16383, "", 7000)}), "192.0.2.7");
        CHECK(*map.master(42) == ClusterNode{"192.0.2.7", 7000});
    }

    TEST_CASE("a reply that is not a slot map is refused, naming redis.cluster") {
        CHECK_THROWS_WITH_AS(
            SlotMap::parse(error("ERR This instance has cluster support disabled"), "h"),
            doctest::Contains("cluster support disabled"), RedisReplyError);
        CHECK_THROWS_WITH_AS(SlotMap::parse(text("x"), "h"), doctest::Contains("redis.cluster"),
                             RedisReplyError);
        CHECK_THROWS_AS(
            SlotMap::parse(
                array({array({integer(0), integer(16384), array({text("h"), integer(1)})})}), "h"),
            RedisReplyError);
        CHECK_THROWS_AS(
            SlotMap::parse(array({array({integer(9), integer(3), array({text("h"), integer(1)})})}),
                           "h"),
            RedisReplyError);
        CHECK_THROWS_AS(SlotMap::parse(array({array({integer(0), integer(3)})}), "h"),
                        RedisReplyError);
    }

    TEST_CASE("MOVED and ASK replies name the slot and the node; other errors are none") {
        auto moved = parse_redirect(error("MOVED 3999 127.0.0.1:6381"));
        REQUIRE(moved);
        CHECK(moved->kind == Redirect::Kind::moved);
        CHECK(moved->slot == 3999);
        CHECK(moved->node == ClusterNode{"127.0.0.1", 6381});
        auto ask = parse_redirect(error("ASK 16383 [::1]:7000"));
        REQUIRE(ask);
        CHECK(ask->kind == Redirect::Kind::ask);
        CHECK(ask->node == ClusterNode{"::1", 7000});
        CHECK_FALSE(parse_redirect(error("TRYAGAIN Multiple keys request during rehashing")));
        CHECK_FALSE(parse_redirect(error("MOVED x 127.0.0.1:1")));
        CHECK_FALSE(parse_redirect(error("MOVED 16384 127.0.0.1:1")));
        CHECK_FALSE(parse_redirect(error("MOVED 1 127.0.0.1")));
        CHECK_FALSE(parse_redirect(text("MOVED 1 127.0.0.1:1")));  // a value, not an error
    }

    TEST_CASE("host:port is read with a port in range and IPv6 in brackets") {
        CHECK(parse_host_port("redis-1.internal:7000") == HostPort{"redis-1.internal", 7000});
        CHECK(parse_host_port("[::1]:7000") == HostPort{"::1", 7000});
        for (const char* bad : {"", "host", "host:", ":7000", "host:0", "host:65536", "host:7x",
                                "::1:7000", "[]:1"}) {
            CAPTURE(bad);
            CHECK_FALSE(parse_host_port(bad));
        }
    }

    TEST_CASE("single-server claim keys are unchanged by the cluster layout") {
        CHECK(claim_key(KeyLayout::single, "exo", "billing", "eu:42") == "exo:billing:eu%3A42");
        CHECK(claim_key(KeyLayout::single, "exo", "billing", "a{b}") == "exo:billing:a{b}");
    }

    TEST_CASE("cluster claim keys tag the group and the key's bucket, so one key has one slot") {
        const std::string k = claim_key(KeyLayout::cluster, "exo", "billing", "eu:42");
        const int bucket = claim_bucket("eu:42");
        const std::string tag =
            "billing:" + std::string(bucket < 10 ? "0" : "") + std::to_string(bucket);
        CHECK(k == "exo:{" + tag + "}:eu%3A42");
        CHECK(key_hash_slot(k) == key_hash_slot(tag));
        CHECK(cluster_hash_tag("billing", bucket) == "{" + tag + "}");
        CHECK(cluster_hash_tag("g}{", 3) == "{g%7D%7B:03}");  // escaped as in the key
        // The bucket depends on the idempotency key only (not on a partition).
        CHECK(claim_bucket("eu:42") == static_cast<int>(crc16("eu:42") % cluster_buckets));
    }

    TEST_CASE("braces in the prefix, group or key cannot move the cluster key's hash tag") {
        const std::string k = claim_key(KeyLayout::cluster, "p{x}", "g}{", "{k}");
        CHECK(k.find("p%7Bx%7D:{g%7D%7B:") == 0);
        const int bucket = claim_bucket("{k}");
        CHECK(key_hash_slot(k) == key_hash_slot("g%7D%7B:" + std::string(bucket < 10 ? "0" : "") +
                                                std::to_string(bucket)));
        // Still unambiguous across groups and keys.
        CHECK(claim_key(KeyLayout::cluster, "exo", "billing", "eu:42") !=
              claim_key(KeyLayout::cluster, "exo", "billing:eu", "42"));
    }

    TEST_CASE("a group's claim keys spread over cluster_buckets slots and no more") {
        std::set<int> slots;
        std::set<int> buckets;
        for (int i = 0; i < 2000; ++i) {
            const std::string key = "order-" + std::to_string(i);
            slots.insert(key_hash_slot(claim_key(KeyLayout::cluster, "exo", "billing", key)));
            buckets.insert(claim_bucket(key));
        }
        CHECK(buckets.size() == static_cast<std::size_t>(cluster_buckets));
        CHECK(slots.size() == static_cast<std::size_t>(cluster_buckets));
    }
}

TEST_SUITE("redis.cluster config") {
    TEST_CASE("redis.cluster lists the startup nodes and prints back") {
        const Config c = parse(std::string(kMinimal) + R"(
redis:
  cluster: [10.0.0.1:7000, "redis-2:7001", "[::1]:7002"]
  key_prefix: ledger
)");
        REQUIRE(c.redis.cluster.size() == 3);
        CHECK(c.redis.cluster[0] == HostPort{"10.0.0.1", 7000});
        CHECK(c.redis.cluster[1] == HostPort{"redis-2", 7001});
        CHECK(c.redis.cluster[2] == HostPort{"::1", 7002});
        const std::string printed = effective_config_yaml(c);
        CHECK(printed.find("redis:\n  cluster:\n    - \"10.0.0.1:7000\"\n    - \"redis-2:7001\"\n"
                           "    - \"[::1]:7002\"\n") != std::string::npos);
        CHECK(printed.find("  host:") == std::string::npos);
        CHECK(printed.find("  db:") == std::string::npos);
        const Config again = parse(printed);
        CHECK(again.redis.cluster == c.redis.cluster);
    }

    TEST_CASE("redis.cluster beside host and port is refused, naming both and the fix") {
        const ConfigError e = error_of(std::string(kMinimal) + R"(
redis:
  host: redis.internal
  port: 6380
  cluster: [10.0.0.1:7000]
)");
        const std::string what = e.what();
        CHECK(what.find("exo.yaml:12: redis.host: is a single server's address, but redis.cluster "
                        "(line 14) names a Redis Cluster: remove redis.host to use the cluster, "
                        "or redis.cluster to use one server") != std::string::npos);
        CHECK(what.find("exo.yaml:13: redis.port:") != std::string::npos);
    }

    TEST_CASE("redis.cluster beside db is refused: a cluster has database 0 only") {
        CHECK(errors_of(std::string(kMinimal) + R"(
redis:
  cluster: [10.0.0.1:7000]
  db: 2
)")
                  .find("redis.db: selects a database, but Redis Cluster has database 0 only") !=
              std::string::npos);
    }

    TEST_CASE("redis.cluster entries must be host:port, listed once, and the list not empty") {
        const std::string what = errors_of(std::string(kMinimal) + R"(
redis:
  cluster: [10.0.0.1:7000, "redis-2", 10.0.0.1:7000]
)");
        CHECK(what.find("redis.cluster[1]: expected host:port") != std::string::npos);
        CHECK(what.find("redis.cluster[2]: '10.0.0.1:7000' is already listed") !=
              std::string::npos);
        CHECK(errors_of(std::string(kMinimal) + "redis:\n  cluster: []\n")
                  .find("redis.cluster: lists no node") != std::string::npos);
    }
}
