// check-config --print: config/config_printer.hpp. No servers.
#include <doctest/doctest.h>

#include <string>

#include "config/config_printer.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

namespace {

constexpr std::string_view kFull = R"(
kafka:
  bootstrap_servers: "broker-1:9092,broker-2:9092"
  group_id: exo-ledger
  commit_interval_ms: 500
  properties:
    security.protocol: sasl_ssl
    sasl.username: alice
    sasl.password: "${SASL_PW}"
    ssl.key.password: key-pw-1
    sasl.oauthbearer.client.secret: oauth-secret-1
redis:
  host: redis.local
  port: 6380
  username: exo-app
  password: "${REDIS_PW}"
postgres:
  uri: "postgresql://exo:${PG_PW}@db/exo?sslmode=require"
  lock_timeout_ms: 2000
pipeline:
  concurrency: 8
  on_redis_down: postgres_only
logging:
  level: debug
  format: json
observability:
  listen: "[::1]:9090"
bindings:
  - topic: payments
    handler: ledger
    key: { json: /eventId }
    sequence: { entity: /accountId, value: /sequenceId, mode: strict }
    options: { currency: EUR, api_secret: opt-secret-1, note: "costs $${PRICE} true" }
  - topic: audit-log
    handler: audit
    key: coordinates
    max_attempts: 2
    dead_letter_topic: audit-dead
    on_key_reuse: log
)";

const EnvLookup kSecrets =
    env_of({{"SASL_PW", "sasl-pw-1"}, {"REDIS_PW", "redis-pw-1"}, {"PG_PW", "pg-pw-1"}});

}  // namespace

TEST_SUITE("check-config --print") {
    TEST_CASE("the printed configuration parses to the same configuration: a fixed point") {
        const std::string first = effective_config_yaml(parse(kFull, kSecrets));
        const Config again = parse_config_text(first, "printed", kHandlers, kNoEnv);
        const std::string second = effective_config_yaml(again);
        CHECK(first == second);
        CHECK(again.kafka.bootstrap_servers == "broker-1:9092,broker-2:9092");
        CHECK(again.kafka.commit_interval.count() == 500);
        CHECK(again.redis.port == 6380);
        CHECK(again.redis.username == "exo-app");
        CHECK(again.postgres.lock_timeout.count() == 2000);
        CHECK(again.pipeline.concurrency == 8);
        CHECK(again.pipeline.on_redis_down == RedisDownPolicy::postgres_only);
        CHECK(again.logging.level == "debug");
        CHECK(again.logging.format == LogFormat::json);
        REQUIRE(again.observability.enabled());
        CHECK(again.observability.listen->host == "::1");
        CHECK(again.observability.listen->port == 9090);
        REQUIRE(again.bindings.size() == 2);
        CHECK(again.bindings[0].sequence->mode == SequenceMode::strict);
        CHECK(again.bindings[0].options.string("note") == "costs ${PRICE} true");
        CHECK(again.bindings[0].options.string("currency") == "EUR");
        CHECK(again.bindings[1].key.kind == KeySourceKind::coordinates);
        CHECK(again.bindings[1].dead_letter_topic == "audit-dead");
        CHECK(again.bindings[0].dead_letter_topic == "payments.dlq");
        CHECK(again.bindings[0].on_key_reuse == KeyReusePolicy::dead_letter);
        CHECK(again.bindings[1].on_key_reuse == KeyReusePolicy::log);
    }

    TEST_CASE("every secret is printed as ***** whether written or from the environment") {
        const std::string printed = effective_config_yaml(parse(kFull, kSecrets));
        for (const char* secret :
             {"sasl-pw-1", "redis-pw-1", "pg-pw-1", "key-pw-1", "oauth-secret-1", "opt-secret-1"}) {
            CAPTURE(secret);
            CHECK(printed.find(secret) == std::string::npos);
        }
        CHECK(printed.find("uri: \"postgresql://exo:*****@db/exo?sslmode=require\"") !=
              std::string::npos);
        CHECK(printed.find("password: \"*****\"") != std::string::npos);
        CHECK(printed.find("sasl.password: \"*****\"") != std::string::npos);
        CHECK(printed.find("sasl.username: \"alice\"") != std::string::npos);
        // A Redis ACL user name is not a secret: printed as written.
        CHECK(printed.find("  username: \"exo-app\"") != std::string::npos);
        CHECK(printed.find("api_secret: \"*****\"") != std::string::npos);
    }

    TEST_CASE(
        "api_key, token, Authorization, private_key, passphrase, sasl.jaas.config and ssl.key.pem "
        "print as *****, and a uri's password is masked under any key") {
        const std::string printed = effective_config_yaml(parse(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
  properties:
    sasl.jaas.config: "org.apache.kafka.common.security.plain.PlainLoginModule required password=jaas-1;"
    ssl.key.pem: "-----BEGIN PRIVATE KEY-----pem-1"
    ssl.key.passphrase: "phrase-1"
postgres:
  uri: "postgresql://exo@db/exo?password=w0rd-1"
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
    options:
      api_key: "api-1"
      token: "token-1"
      Authorization: "Bearer bearer-1"
      private_key: "private-1"
      webhook: "https://hook:hook-1@hooks.example/x"
      currency: EUR
)"));
        for (const char* secret : {"jaas-1", "pem-1", "phrase-1", "w0rd-1", "api-1", "token-1",
                                   "bearer-1", "private-1", "hook-1"}) {
            CAPTURE(secret);
            CHECK_MESSAGE(printed.find(secret) == std::string::npos, printed);
        }
        CHECK(printed.find("webhook: \"https://hook:*****@hooks.example/x\"") != std::string::npos);
        CHECK(printed.find("currency: \"EUR\"") != std::string::npos);
    }

    TEST_CASE("defaults are filled in for every key left out") {
        const std::string printed = effective_config_yaml(parse(R"(
kafka:
  mock: { topics: ["payments:4"] }
  group_id: g
postgres:
  uri: postgresql://exo@localhost/exo
bindings:
  - topic: payments
    handler: ledger
    key: { header: event-id }
)"));
        for (const char* line : {"brokers: 1",
                                 "\"payments:4\"",
                                 "commit_interval_ms: 1000",
                                 "host: \"127.0.0.1\"",
                                 "port: 6379",
                                 "password: \"\"",
                                 "key_prefix: \"exo\"",
                                 "dedup_retention_days: 30",
                                 "connect_timeout_ms: 5000",
                                 "keepalives_count: 3",
                                 "lease_ms: 30000",
                                 "completed_ttl_ms: 86400000",
                                 "concurrency: 2",
                                 "outside_threads: 32",
                                 "linger_ms: 5",
                                 "on_redis_down: \"pause\"",
                                 "level: \"info\"",
                                 "format: \"text\"",
                                 "header: \"event-id\"",
                                 "max_attempts: 5",
                                 "dead_letter_topic: \"payments.dlq\""}) {
            CAPTURE(line);
            CHECK(printed.find(line) != std::string::npos);
        }
        const Config again = parse_config_text(printed, "printed", kHandlers, kNoEnv);
        CHECK_FALSE(again.observability.enabled());
        CHECK(effective_config_yaml(again) == printed);
    }

    TEST_CASE("a mock cluster and a key=value postgres uri print as a fixed point") {
        const std::string first = effective_config_yaml(parse(R"(
kafka:
  mock: { brokers: 3, topics: ["payments:4"], bootstrap_file: /tmp/b }
  group_id: demo
postgres:
  uri: "host=localhost user=exo password='a b\\'c' dbname=exo"
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
)"));
        CHECK(first.find("a b") == std::string::npos);
        CHECK(first.find("password=*****") != std::string::npos);
        CHECK(first.find("brokers: 3") != std::string::npos);
        CHECK(first.find("bootstrap_file: \"/tmp/b\"") != std::string::npos);
        CHECK(effective_config_yaml(parse_config_text(first, "printed", kHandlers, kNoEnv)) ==
              first);
    }

    TEST_CASE(
        "hash keys print as a fixed point: fields, exclude, prefix_topic and the whole "
        "payload") {
        const std::string first = effective_config_yaml(parse(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings:
  - { topic: a, handler: ledger, key: { hash: { fields: [/orderId, /amount], prefix_topic: true } } }
  - { topic: b, handler: ledger, key: { hash: { exclude: [/sentAt] } } }
  - { topic: c, handler: ledger, key: { hash: {} } }
)"));
        const Config again = parse_config_text(first, "printed", kHandlers, kNoEnv);
        CHECK(effective_config_yaml(again) == first);
        REQUIRE(again.bindings.size() == 3);
        CHECK(again.bindings[0].key.kind == KeySourceKind::hash);
        CHECK(again.bindings[0].key.hash.fields == std::vector<std::string>{"/orderId", "/amount"});
        CHECK(again.bindings[0].key.hash.prefix_topic);
        CHECK(again.bindings[1].key.hash.exclude == std::vector<std::string>{"/sentAt"});
        CHECK_FALSE(again.bindings[1].key.hash.prefix_topic);
        CHECK(again.bindings[2].key.kind == KeySourceKind::hash);
        CHECK(again.bindings[2].key.hash.fields.empty());
        CHECK(again.bindings[2].key.hash.exclude.empty());
    }
}
