// exo.yaml parsing: config/config_parser.hpp. No servers.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "config/config_parser.hpp"
#include "core/embedded_file.hpp"
#include "protocol/handler_registry.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace std::chrono_literals;

using namespace exo::testing::config_text;

TEST_SUITE("config") {
    TEST_CASE("a full config file sets every field") {
        const Config c = parse(R"(
kafka:
  mock:
    brokers: 3
    topics: ["payments:4", "accounts"]
    bootstrap_file: /tmp/exo-bootstrap
  group_id: exo-ledger
  commit_interval_ms: 250
  properties:
    session.timeout.ms: 6000
    fetch.wait.max.ms: 10
    enable.partition.eof: false
    client.id: exo-test
redis:
  host: redis.internal
  port: 6380
  password: s3cret
  db: 2
  connect_timeout_ms: 1500
  command_timeout_ms: 750
  key_prefix: ledger
postgres:
  uri: postgresql://exo@db/exo
  dedup_retention_days: 7
claim:
  lease_ms: 20000
  completed_ttl_ms: 3600000
  verify_duplicates: true
pipeline:
  outside_threads: 8
  batch_size: 50
  linger_ms: 0
  concurrency: 3
  max_queued_per_partition: 500
  max_in_flight: 4000
  shutdown_timeout_ms: 5000
  retry_backoff_initial_ms: 50
  retry_backoff_max_ms: 2000
  on_redis_down: postgres_only
logging:
  level: debug
bindings:
  - topic: payments
    handler: ledger
    key: { json: /payment_id }
    sequence: { entity: /account_id, value: /seq, mode: strict, gap_timeout_ms: 30000 }
    ordering: entity
    max_attempts: 3
    dead_letter_topic: payments.dead
  - topic: accounts
    handler: audit
    key: { header: idempotency-key }
  - topic: audit-log
    handler: audit
    key: coordinates
)");
        CHECK(c.kafka.bootstrap_servers.empty());
        REQUIRE(c.kafka.mock.has_value());
        CHECK(c.kafka.mock->brokers == 3);
        REQUIRE(c.kafka.mock->topics.size() == 2);
        CHECK(c.kafka.mock->topics[0].name == "payments");
        CHECK(c.kafka.mock->topics[0].partitions == 4);
        CHECK(c.kafka.mock->topics[1].name == "accounts");
        CHECK(c.kafka.mock->topics[1].partitions == 1);
        CHECK(c.kafka.mock->bootstrap_file == "/tmp/exo-bootstrap");
        CHECK(c.kafka.group_id == "exo-ledger");
        CHECK(c.kafka.commit_interval == 250ms);
        CHECK(c.kafka.properties ==
              std::map<std::string, std::string>{{"session.timeout.ms", "6000"},
                                                 {"fetch.wait.max.ms", "10"},
                                                 {"enable.partition.eof", "false"},
                                                 {"client.id", "exo-test"}});

        CHECK(c.redis.host == "redis.internal");
        CHECK(c.redis.port == 6380);
        CHECK(c.redis.password == "s3cret");
        CHECK(c.redis.db == 2);
        CHECK(c.redis.connect_timeout == 1500ms);
        CHECK(c.redis.command_timeout == 750ms);
        CHECK(c.redis.key_prefix == "ledger");

        CHECK(c.postgres.uri == "postgresql://exo@db/exo");
        CHECK(c.postgres.dedup_retention == std::chrono::hours(7 * 24));
        CHECK(c.claim.lease == 20000ms);
        CHECK(c.claim.completed_ttl == 3600000ms);

        CHECK(c.pipeline.outside_threads == 8);
        CHECK(c.pipeline.batch_size == 50);
        CHECK(c.pipeline.linger == 0ms);
        CHECK(c.pipeline.max_queued_per_partition == 500);
        CHECK(c.pipeline.max_in_flight == 4000);
        CHECK(c.pipeline.concurrency == 3);
        CHECK(c.bindings[0].ordering == Ordering::entity);
        CHECK(c.bindings[1].ordering == Ordering::partition);  // the default
        CHECK(c.pipeline.shutdown_timeout == 5000ms);
        CHECK(c.pipeline.retry_backoff_initial == 50ms);
        CHECK(c.pipeline.retry_backoff_max == 2000ms);
        CHECK(c.pipeline.on_redis_down == RedisDownPolicy::postgres_only);
        CHECK(c.claim.verify_duplicates);
        CHECK(c.logging.level == "debug");

        REQUIRE(c.bindings.size() == 3);
        const BindingConfig& payments = c.bindings[0];
        CHECK(payments.topic == "payments");
        CHECK(payments.handler == "ledger");
        CHECK(payments.key.kind == KeySourceKind::json);
        CHECK(payments.key.name == "/payment_id");
        REQUIRE(payments.sequence.has_value());
        CHECK(payments.sequence->entity_pointer == "/account_id");
        CHECK(payments.sequence->value_pointer == "/seq");
        CHECK(payments.sequence->mode == SequenceMode::strict);
        CHECK(payments.sequence->gap_timeout == 30000ms);
        CHECK(payments.max_attempts == 3);
        CHECK(payments.dead_letter_topic == "payments.dead");
        CHECK(payments.yaml_line == 42);

        CHECK(c.bindings[1].key.kind == KeySourceKind::header);
        CHECK(c.bindings[1].key.name == "idempotency-key");
        CHECK(c.bindings[1].yaml_line == 49);
        CHECK(c.bindings[2].key.kind == KeySourceKind::coordinates);
        CHECK(c.bindings[2].key.name.empty());
    }

    TEST_CASE("keys left out keep the defaults of config.hpp") {
        const Config c = parse(kMinimal);
        const Config defaults;
        CHECK(c.kafka.bootstrap_servers == "localhost:9092");
        CHECK_FALSE(c.kafka.mock.has_value());
        CHECK(c.kafka.properties.empty());
        CHECK(c.kafka.commit_interval == defaults.kafka.commit_interval);

        CHECK(c.redis.host == defaults.redis.host);
        CHECK(c.redis.port == defaults.redis.port);
        CHECK(c.redis.password == defaults.redis.password);
        CHECK(c.redis.db == defaults.redis.db);
        CHECK(c.redis.connect_timeout == defaults.redis.connect_timeout);
        CHECK(c.redis.command_timeout == defaults.redis.command_timeout);
        CHECK(c.redis.key_prefix == defaults.redis.key_prefix);

        CHECK(c.postgres.dedup_retention == defaults.postgres.dedup_retention);
        CHECK(c.claim.lease == defaults.claim.lease);
        CHECK(c.claim.completed_ttl == defaults.claim.completed_ttl);

        CHECK(c.pipeline.concurrency == defaults.pipeline.concurrency);
        CHECK(c.pipeline.outside_threads == defaults.pipeline.outside_threads);
        CHECK(c.pipeline.batch_size == defaults.pipeline.batch_size);
        CHECK(c.pipeline.linger == defaults.pipeline.linger);
        CHECK(c.pipeline.max_queued_per_partition == defaults.pipeline.max_queued_per_partition);
        CHECK(c.pipeline.shutdown_timeout == defaults.pipeline.shutdown_timeout);
        CHECK(c.pipeline.retry_backoff_initial == defaults.pipeline.retry_backoff_initial);
        CHECK(c.pipeline.retry_backoff_max == defaults.pipeline.retry_backoff_max);
        CHECK(c.pipeline.on_redis_down == RedisDownPolicy::pause);
        CHECK(c.logging.level == "info");

        REQUIRE(c.bindings.size() == 1);
        CHECK(c.bindings[0].key.kind == KeySourceKind::coordinates);
        CHECK_FALSE(c.bindings[0].sequence.has_value());
        CHECK(c.bindings[0].max_attempts == BindingConfig{}.max_attempts);
        CHECK(c.bindings[0].dead_letter_topic == "payments.dlq");
        CHECK(c.bindings[0].yaml_line == 7);
    }

    TEST_CASE("a sequence gets the default mode and gap timeout when only its pointers are given") {
        const Config c = parse(R"(
kafka: { bootstrap_servers: "k:9092", group_id: g }
postgres: { uri: "postgresql:///exo" }
bindings:
  - { topic: t, handler: ledger, key: coordinates, sequence: { entity: /id, value: /n } }
)");
        REQUIRE(c.bindings[0].sequence.has_value());
        CHECK(c.bindings[0].sequence->mode == SequenceMode::latest);
        CHECK(c.bindings[0].sequence->gap_timeout == SequenceConfig{}.gap_timeout);
    }

    TEST_CASE(
        "a sequence is shared by the groups on a database unless its binding says scope: group") {
        const Config c = parse(R"(
kafka: { bootstrap_servers: "k:9092", group_id: prod }
postgres: { uri: "postgresql:///exo" }
bindings:
  - { topic: t, handler: ledger, key: coordinates, sequence: { entity: /id, value: /n } }
  - topic: u
    handler: audit
    key: coordinates
    sequence: { entity: /id, value: /n, scope: group }
)");
        const auto& shared = *c.bindings[0].sequence;
        const auto& own = *c.bindings[1].sequence;
        CHECK(shared.scope == SequenceScope::shared);
        CHECK(own.scope == SequenceScope::group);
        // What exo_sequences.handler holds: unchanged for shared, so an upgrade
        // keeps every existing row; the group's own name otherwise.
        CHECK(sequence_owner("ledger", shared.scope, c.kafka.group_id) == "ledger");
        CHECK(sequence_owner("audit", own.scope, c.kafka.group_id) == "audit@prod");
        CHECK(sequence_owner("audit", own.scope, "test") !=
              sequence_owner("audit", own.scope, "prod"));
    }

    TEST_CASE("a sequence scope other than shared or group is refused with its path and line") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:9092", group_id: g }
postgres: { uri: "postgresql:///exo" }
bindings:
  - topic: t
    handler: ledger
    key: coordinates
    sequence:
      entity: /id
      value: /n
      scope: grop
)");
        CHECK(text.find("exo.yaml:10: bindings[0].sequence.scope: unknown value 'grop'; expected "
                        "one of: shared, group (did you mean 'group'?)") != std::string::npos);
    }

    TEST_CASE(
        "two bindings of one handler with different sequence scopes are refused, naming "
        "both lines") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:9092", group_id: g }
postgres: { uri: "postgresql:///exo" }
bindings:
  - { topic: a, handler: ledger, key: coordinates, sequence: { entity: /id, value: /n } }
  - topic: b
    handler: ledger
    key: coordinates
    sequence: { entity: /id, value: /n,
                scope: group }
  - { topic: c, handler: audit, key: coordinates, sequence: { entity: /id, value: /n } }
  - { topic: d, handler: audit, key: coordinates,
      sequence: { entity: /id, value: /n, scope: shared } }
)");
        CHECK(text.find("exo.yaml:9: bindings[1].sequence.scope: is group, but another binding of "
                        "handler 'ledger' (line 4) has shared (the default): give every "
                        "sequenced binding of one handler the same scope") != std::string::npos);
        CHECK(text.find("bindings[3]") == std::string::npos);  // same scope, said or not
    }

    TEST_CASE(
        "scope: group is refused for a handler whose name has '@', which would make two "
        "groups' rows one") {
        const auto yaml = body(R"(
kafka: { bootstrap_servers: "k:9092", group_id: g }
postgres: { uri: "postgresql:///exo" }
bindings:
  - topic: a
    handler: "ledger@eu"
    key: coordinates
    sequence: { entity: /id, value: /n, scope: group }
  - topic: b
    handler: "ledger@eu"
    key: coordinates
    sequence: { entity: /id, value: /n, scope: group }
)");
        try {
            parse_config_text(yaml, "exo.yaml", {"ledger@eu"}, kNoEnv);
            FAIL("expected a ConfigError");
        } catch (const ConfigError& e) {
            const std::string text = e.what();
            CHECK(text.find("exo.yaml:7: bindings[0].sequence.scope: is group, but handler "
                            "'ledger@eu' has '@' in its name") != std::string::npos);
            CHECK(text.find("exo.yaml:11: bindings[1].sequence.scope") != std::string::npos);
        }
        // Shared, the name is stored as it is: nothing to refuse.
        std::string shared(yaml);
        for (auto at = shared.find("scope: group"); at != std::string::npos;
             at = shared.find("scope: group"))
            shared.replace(at, 12, "scope: shared");
        CHECK(parse_config_text(shared, "exo.yaml", {"ledger@eu"}, kNoEnv)
                  .bindings[0]
                  .sequence->scope == SequenceScope::shared);
    }

    TEST_CASE("an empty section or an empty mock reads as all defaults") {
        const Config c = parse(R"(
kafka:
  mock:
  group_id: g
redis:
postgres: { uri: "postgresql:///exo" }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        REQUIRE(c.kafka.mock.has_value());
        CHECK(c.kafka.mock->brokers == 1);
        CHECK(c.kafka.mock->topics.empty());
        CHECK(c.redis.port == 6379);
    }

    // The files of config/ (embedded in the binary) with the example's handler.
    // Their ${VAR}s without a default come from scripts/services.sh, so here every
    // variable is unset: defaults are checked, and "is not set" is the only
    // problem allowed.
    TEST_CASE("every config file shipped in config/ parses with the registered handlers") {
        const std::vector<std::string> example_handlers = {"ledger"};
        for (const EmbeddedFile& file : embedded::config::files()) {
            CAPTURE(file.name);
            try {
                const Config config = parse_config_text(file.contents, std::string(file.name),
                                                        example_handlers, kNoEnv);
                CHECK_FALSE(config.bindings.empty());
            } catch (const ConfigError& e) {
                for (const ConfigProblem& p : e.problems()) {
                    if (p.message.starts_with("environment variable ")) continue;
                    FAIL_CHECK(std::string(file.name)
                               << ":" << p.line << ": " << p.path << ": " << p.message);
                }
            }
        }
    }

    TEST_CASE("a YAML syntax error is one problem with its line") {
        const ConfigError e = error_of(R"(
kafka:
  group_id: g
  properties: { a: 1
redis:
  port: 1
)");
        REQUIRE(e.problems().size() == 1);
        CHECK(e.problems()[0].line > 1);
        const std::string text = e.what();
        CHECK(text.find("exo.yaml:" + std::to_string(e.problems()[0].line) +
                        ": YAML syntax error") == 0);

        const std::string bad_indent = errors_of(R"(
kafka:
  group_id: g
    bootstrap_servers: x
)");
        CHECK(bad_indent.find("exo.yaml:3: YAML syntax error") != std::string::npos);
    }

    TEST_CASE("an unquoted ${VAR} inside a flow mapping gets a hint to quote it") {
        const std::string text = errors_of(R"(
kafka: { group_id: g, bootstrap_servers: ${KAFKA} }
)",
                                           env_of({{"KAFKA", "k:9092"}}));
        CHECK(text.find("exo.yaml:1: YAML syntax error") == 0);
        CHECK(text.find("quote a value that uses ${VAR}") != std::string::npos);
    }

    TEST_CASE("an unknown key is named with its path and line and a did-you-mean") {
        const std::string text = errors_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
  comit_interval_ms: 10
postgres:
  uri: x
pipline:
  concurrency: 2
bindings:
  - topic: t
    handler: ledger
    key: { hedaer: id }
    max_attempt: 3
    colour: red
)");
        CHECK(text.find("exo.yaml:4: kafka.comit_interval_ms: unknown key 'comit_interval_ms'; did "
                        "you mean "
                        "'commit_interval_ms'?") != std::string::npos);
        CHECK(text.find("exo.yaml:7: pipline: unknown key 'pipline'; did you mean 'pipeline'?") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:12: bindings[0].key.hedaer: unknown key 'hedaer'; did you mean "
                        "'header'?") != std::string::npos);
        CHECK(text.find(
                  "exo.yaml:13: bindings[0].max_attempt: unknown key 'max_attempt'; did you mean "
                  "'max_attempts'?") != std::string::npos);
        // Nothing close: the known keys are listed instead.
        CHECK(text.find(
                  "exo.yaml:14: bindings[0].colour: unknown key 'colour'; known keys here: topic, "
                  "handler, key, sequence, ordering, max_attempts, dead_letter_topic") !=
              std::string::npos);
        // The misspelt key form is reported once, not also as "no key form".
        CHECK(text.find("names no key form") == std::string::npos);
    }

    TEST_CASE("a key given twice in one mapping is a problem naming both lines") {
        const std::string text = errors_of(R"(
kafka:
  bootstrap_servers: a:1
  group_id: g
  group_id: h
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        CHECK(text.find("exo.yaml:4: kafka.group_id: duplicate key (first given at line 3)") !=
              std::string::npos);
    }

    TEST_CASE("values of the wrong type are each reported with path and line") {
        const ConfigError e = error_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: [a, b]
  commit_interval_ms: 5s
redis:
  host: { name: x }
  port: 70000
  db: -1
postgres:
  uri: x
  dedup_retention_days: thirty
claim:
  lease_ms: -5
pipeline:
  concurrency: many
  batch_size: 0
  linger_ms: 1.5
  on_redis_down: crash
logging:
  level: verbose
bindings:
  - topic: t
    handler: ledger
    key: coordinates
    max_attempts: 0
)");
        const std::string text = e.what();
        CHECK(text.find("exo.yaml:3: kafka.group_id: expected a string, got a list") !=
              std::string::npos);
        CHECK(text.find(
                  "exo.yaml:4: kafka.commit_interval_ms: expected a duration in whole milliseconds "
                  "(e.g. 1500), got '5s'; write 5000") != std::string::npos);
        CHECK(text.find("exo.yaml:6: redis.host: expected a string, got a mapping") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:7: redis.port: must be between 1 and 65535, got 70000") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:8: redis.db: must be at least 0, got -1") != std::string::npos);
        CHECK(text.find(
                  "exo.yaml:11: postgres.dedup_retention_days: expected a whole number of days") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:13: claim.lease_ms: must be at least 1, got -5") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:15: pipeline.concurrency: expected a whole number, got 'many'") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:16: pipeline.batch_size: must be at least 1, got 0") !=
              std::string::npos);
        CHECK(text.find(
                  "exo.yaml:17: pipeline.linger_ms: expected a duration in whole milliseconds") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:18: pipeline.on_redis_down: unknown value 'crash'; expected one "
                        "of: pause, "
                        "postgres_only") != std::string::npos);
        CHECK(text.find("exo.yaml:20: logging.level: unknown value 'verbose'") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:25: bindings[0].max_attempts: must be at least 1, got 0") !=
              std::string::npos);
        CHECK(e.problems().size() == 13);
    }

    TEST_CASE("a mock cluster needs at least one broker and one partition per topic") {
        const std::string text = errors_of(R"(
kafka:
  mock:
    brokers: 0
    topics: ["payments:0", "ok:2", "bad topic:1", "ok:3", "x:two"]
  group_id: g
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        CHECK(text.find("exo.yaml:3: kafka.mock.brokers: must be at least 1, got 0") !=
              std::string::npos);
        CHECK(text.find(
                  "exo.yaml:4: kafka.mock.topics[0]: the partition count after ':' must be a whole "
                  "number of at least 1") != std::string::npos);
        CHECK(text.find("kafka.mock.topics[2]: topic 'bad topic' has characters Kafka refuses") !=
              std::string::npos);
        CHECK(text.find("kafka.mock.topics[3]: topic 'ok' is already listed") != std::string::npos);
        CHECK(text.find("kafka.mock.topics[4]: the partition count") != std::string::npos);
    }

    TEST_CASE("missing required keys are each named") {
        const std::string text = errors_of(R"(
kafka:
  commit_interval_ms: 100
postgres:
  dedup_retention_days: 3
bindings:
  - handler: ledger
  - topic: t2
)");
        CHECK(text.find("exo.yaml:1: kafka.bootstrap_servers: required key is missing") !=
              std::string::npos);
        CHECK(text.find(
                  "exo.yaml:1: kafka.group_id: required key is missing: name the consumer group") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:3: postgres.uri: required key is missing") != std::string::npos);
        CHECK(text.find("exo.yaml:6: bindings[0].topic: required key is missing") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:6: bindings[0].key: required key is missing") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:7: bindings[1].handler: required key is missing") !=
              std::string::npos);
    }

    TEST_CASE("an empty file lists every required section, without a line") {
        const ConfigError e = error_of("");
        const std::string text = e.what();
        CHECK(text.find("exo.yaml: kafka.bootstrap_servers: required key is missing") !=
              std::string::npos);
        CHECK(text.find("exo.yaml: kafka.group_id: required key is missing") != std::string::npos);
        CHECK(text.find("exo.yaml: postgres.uri: required key is missing") != std::string::npos);
        CHECK(text.find("exo.yaml: bindings: required key is missing") != std::string::npos);
        for (const ConfigProblem& p : e.problems()) CHECK(p.line == 0);
    }

    TEST_CASE("a document that is not a mapping is one problem") {
        const ConfigError e = error_of("- just\n- a list\n");
        REQUIRE(e.problems().size() == 1);
        CHECK(std::string(e.what()) ==
              "exo.yaml: expected a mapping of 'key: value' lines, got a list");
    }

    TEST_CASE("bindings must be a non-empty list") {
        CHECK(errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings: []
)")
                  .find("exo.yaml:3: bindings: lists no binding") != std::string::npos);
        CHECK(errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings: { topic: t }
)")
                  .find("exo.yaml:3: bindings: expected a list") != std::string::npos);
    }

    TEST_CASE("bootstrap_servers and mock together are refused") {
        const ConfigError e = error_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  mock: { topics: ["t:1"] }
  group_id: g
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        REQUIRE(e.problems().size() == 1);
        CHECK(std::string(e.what()).find(
                  "exo.yaml:3: kafka.mock: both bootstrap_servers and mock are given") == 0);
    }

    TEST_CASE(
        "pipeline.framework_sql, a benchmark seam, is refused with where it went, naming its "
        "line") {
        const ConfigError e = error_of(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: x }
pipeline:
  framework_sql: per_record
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        REQUIRE(e.problems().size() == 1);
        CHECK(std::string(e.what()).find("exo.yaml:4: pipeline.framework_sql: is no longer a "
                                         "setting: exo runs a transaction's framework "
                                         "statements set-based and falls back") == 0);
    }

    TEST_CASE("an unknown handler lists the registered ones and the closest") {
        std::string yaml(kMinimal);
        yaml.replace(yaml.find("handler: ledger"), 15, "handler: ledgr");
        const ConfigError e = error_of(yaml);
        REQUIRE(e.problems().size() == 1);
        CHECK(std::string(e.what()) ==
              "exo.yaml:8: bindings[0].handler: unknown handler 'ledgr'; registered handlers: "
              "ledger, audit "
              "(did you mean 'ledger'?)");
    }

    TEST_CASE("a topic bound twice is refused at its second binding") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings:
  - { topic: payments, handler: ledger, key: coordinates }
  - { topic: refunds, handler: ledger, key: coordinates }
  - { topic: payments, handler: audit, key: coordinates }
)");
        CHECK(text ==
              "exo.yaml:6: bindings[2].topic: topic 'payments' is already bound at line 4: give "
              "each topic "
              "one binding");
    }

    TEST_CASE("a dead letter topic equal to the consumed topic is refused") {
        std::string yaml(kMinimal);
        yaml += "    dead_letter_topic: payments\n";
        CHECK(errors_of(yaml).find(
                  "exo.yaml:10: bindings[0].dead_letter_topic: is the consumed topic itself") !=
              std::string::npos);
    }

    TEST_CASE("a key must give exactly one form") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings:
  - { topic: a, handler: ledger, key: { header: id, json: /id } }
  - { topic: b, handler: ledger, key: {} }
  - { topic: c, handler: ledger, key: coordinate }
  - { topic: d, handler: ledger, key: [header] }
  - { topic: e, handler: ledger, key: { header: "" } }
)");
        CHECK(text.find(
                  "exo.yaml:4: bindings[0].key: gives two key forms (header and json): keep one") !=
              std::string::npos);
        const std::string forms =
            "{ header: NAME }, { json: /pointer }, { hash: { fields | exclude: [/pointer, ...] } } "
            "or coordinates";
        CHECK(text.find("exo.yaml:5: bindings[1].key: names no key form: write " + forms) !=
              std::string::npos);
        CHECK(text.find("exo.yaml:6: bindings[2].key: unknown key form 'coordinate'; write " +
                        forms + " (did you mean 'coordinates'?)") != std::string::npos);
        CHECK(text.find("exo.yaml:7: bindings[3].key: expected " + forms + ", got a list") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:8: bindings[4].key.header: must not be empty") !=
              std::string::npos);
    }

    TEST_CASE("a hash key reads its fields or exclusions and prefix_topic") {
        const Config c = parse(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings:
  - topic: a
    handler: ledger
    key: { hash: { fields: [/orderId, /amount, /currency] } }
  - topic: b
    handler: ledger
    key:
      hash:
        exclude:
          - /sentAt
          - /meta/traceId
        prefix_topic: true
  - { topic: c, handler: ledger, key: { hash: {} } }
)");
        REQUIRE(c.bindings.size() == 3);
        CHECK(c.bindings[0].key.kind == KeySourceKind::hash);
        CHECK(c.bindings[0].key.hash.fields ==
              std::vector<std::string>{"/orderId", "/amount", "/currency"});
        CHECK(c.bindings[0].key.hash.exclude.empty());
        CHECK_FALSE(c.bindings[0].key.hash.prefix_topic);
        CHECK(c.bindings[1].key.kind == KeySourceKind::hash);
        CHECK(c.bindings[1].key.hash.fields.empty());
        CHECK(c.bindings[1].key.hash.exclude ==
              std::vector<std::string>{"/sentAt", "/meta/traceId"});
        CHECK(c.bindings[1].key.hash.prefix_topic);
        CHECK(c.bindings[2].key.kind == KeySourceKind::hash);
        CHECK(c.bindings[2].key.hash.fields.empty());
        CHECK(c.bindings[2].key.hash.exclude.empty());
    }

    TEST_CASE("a hash key's mistakes are each named with their path and line") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings:
  - { topic: a, handler: ledger, key: { hash: { fields: [/id], exclude: [/at] } } }
  - { topic: b, handler: ledger, key: { hash: { fields: [] } } }
  - { topic: c, handler: ledger, key: { hash: { exclude: [] } } }
  - topic: d
    handler: ledger
    key:
      hash:
        fields:
          - /id
          - amount
          - /a~2b
          - /id
        prefix_topic: yes
  - { topic: e, handler: ledger, key: { hash: { field: [/id] } } }
  - { topic: f, handler: ledger, key: { hash: /id } }
  - { topic: g, handler: ledger, key: { hash: {}, json: /id } }
  - { topic: h, handler: ledger, key: { hash: { exclude: /at } } }
)");
        CHECK(text.find("exo.yaml:4: bindings[0].key.hash: gives both fields and exclude: hash "
                        "only the listed fields, or the whole payload without the excluded ones; "
                        "keep one") != std::string::npos);
        CHECK(text.find("exo.yaml:5: bindings[1].key.hash.fields: lists no pointer: list the "
                        "fields the key is made of") != std::string::npos);
        CHECK(text.find("exo.yaml:6: bindings[2].key.hash.exclude: lists no pointer: list what "
                        "changes on redelivery, or write hash: {} for the whole payload") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:13: bindings[3].key.hash.fields[1]: a JSON pointer (RFC 6901) "
                        "starts with '/': write '/amount'") != std::string::npos);
        CHECK(text.find("exo.yaml:14: bindings[3].key.hash.fields[2]: JSON pointer '/a~2b' has "
                        "a '~' not followed by 0 or 1") != std::string::npos);
        CHECK(text.find("exo.yaml:15: bindings[3].key.hash.fields[3]: pointer '/id' is already "
                        "listed at line 12: list each pointer once") != std::string::npos);
        CHECK(text.find("exo.yaml:16: bindings[3].key.hash.prefix_topic: unknown value 'yes'; "
                        "expected one of: true, false") != std::string::npos);
        CHECK(text.find("exo.yaml:17: bindings[4].key.hash.field: unknown key 'field'; did you "
                        "mean 'fields'?") != std::string::npos);
        CHECK(text.find("exo.yaml:18: bindings[5].key.hash: expected { fields: [/pointer, ...] "
                        "}, { exclude: [/pointer, ...] } or {} (the whole payload), got the value "
                        "'/id'") != std::string::npos);
        CHECK(text.find("exo.yaml:19: bindings[6].key: gives two key forms (json and hash): keep "
                        "one") != std::string::npos);
        CHECK(text.find("exo.yaml:20: bindings[7].key.hash.exclude: expected a list") !=
              std::string::npos);
    }

    TEST_CASE(
        "pipeline.claim_ahead, a removed threading model, is refused naming its line and what "
        "replaced it") {
        for (const char* value : {"true", "false"}) {
            INFO(value);
            const ConfigError e = error_of(std::string(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
pipeline:
  concurrency: 4
  claim_ahead: )") + value + R"(
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)");
            REQUIRE(e.problems().size() == 1);
            CHECK(std::string(e.what()).find(
                      "exo.yaml:5: pipeline.claim_ahead: was removed: claims are made by each "
                      "batch's own thread; use pipeline.concurrency for parallelism, and remove "
                      "the key") == 0);
        }
    }

    TEST_CASE(
        "pipeline byte bounds, the header cap and the parked bounds are read, default when left "
        "out, and 0 or a "
        "negative number is refused naming the path and line") {
        const Config defaults;
        CHECK(defaults.pipeline.max_in_flight_bytes == 256u * 1024 * 1024);
        CHECK(defaults.pipeline.max_queued_bytes_per_partition == 16u * 1024 * 1024);
        CHECK(defaults.pipeline.max_headers_per_record == 1000);
        CHECK(defaults.pipeline.max_parked_per_partition == 1000);
        CHECK(defaults.pipeline.max_parked_bytes_per_partition == 16u * 1024 * 1024);
        const Config c = parse(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
pipeline:
  max_in_flight_bytes: 8589934592
  max_queued_bytes_per_partition: 1048576
  max_headers_per_record: 64
  max_parked_per_partition: 20
  max_parked_bytes_per_partition: 4294967296
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)");
        CHECK(c.pipeline.max_in_flight_bytes == 8589934592u);  // above 2^31: a size_t
        CHECK(c.pipeline.max_queued_bytes_per_partition == 1048576u);
        CHECK(c.pipeline.max_headers_per_record == 64);
        CHECK(c.pipeline.max_parked_per_partition == 20);
        CHECK(c.pipeline.max_parked_bytes_per_partition == 4294967296u);

        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
pipeline:
  max_in_flight_bytes: 0
  max_queued_bytes_per_partition: -5
  max_headers_per_record: 0
  max_parked_per_partition: 0
  max_parked_bytes_per_partition: -1
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)");
        CHECK(text.find("exo.yaml:4: pipeline.max_in_flight_bytes: must be at least 1, got 0") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:5: pipeline.max_queued_bytes_per_partition: must be at least 1, "
                        "got -5") != std::string::npos);
        CHECK(text.find("exo.yaml:6: pipeline.max_headers_per_record: must be at least 1, got 0") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:7: pipeline.max_parked_per_partition: must be at least 1, got "
                        "0") != std::string::npos);
        CHECK(text.find("exo.yaml:8: pipeline.max_parked_bytes_per_partition: must be at least 1, "
                        "got -1") != std::string::npos);
    }

    TEST_CASE(
        "pipeline.workers, replaced by one pool of batch runners, is refused naming its line and "
        "saying that pipeline.concurrency now counts the whole process's batches") {
        const ConfigError e = error_of(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
pipeline:
  workers: 4
  concurrency: 2
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)");
        REQUIRE(e.problems().size() == 1);
        CHECK(std::string(e.what()).find(
                  "exo.yaml:4: pipeline.workers: was removed: the process runs one pool of batch "
                  "runners; pipeline.concurrency now counts the batches the whole process runs at "
                  "once: set it to the old workers x concurrency (and outside_threads to the old "
                  "workers x outside_threads), and remove the key") == 0);
    }

    TEST_CASE("pipeline.concurrency takes 1 to 1024") {
        const Config c = parse(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
pipeline: { concurrency: 32 }
bindings:
  - { topic: a, handler: ledger, key: coordinates, ordering: key }
)");
        CHECK(c.pipeline.concurrency == 32);
        CHECK(c.bindings[0].ordering == Ordering::key);

        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
pipeline:
  concurrency: 0
  max_in_flight: 0
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)");
        CHECK(text.find("exo.yaml:4: pipeline.concurrency:") != std::string::npos);
        CHECK(text.find("exo.yaml:5: pipeline.max_in_flight:") != std::string::npos);
        const char* base = R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)";
        CHECK(parse(std::string(base) + "pipeline: { concurrency: 1024 }\n").pipeline.concurrency ==
              1024);
        CHECK(errors_of(std::string(base) + "pipeline: { concurrency: 1025 }\n")
                  .find("pipeline.concurrency") != std::string::npos);
    }

    TEST_CASE(
        "pipeline.concurrency defaults to 16 when a binding orders by key or entity, else to 2 "
        "(the "
        "two workers of earlier versions)") {
        const char* head = R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
)";
        const std::string keyed = std::string(head) + R"(bindings:
  - { topic: a, handler: ledger, key: coordinates }
  - { topic: b, handler: ledger, key: coordinates, ordering: key }
)";
        CHECK(parse(keyed).pipeline.concurrency == 16);
        CHECK(parse(keyed + "pipeline: { concurrency: 1 }\n").pipeline.concurrency == 1);
        CHECK(parse(std::string(head) + R"(bindings:
  - { topic: a, handler: ledger, key: coordinates }
)")
                  .pipeline.concurrency == 2);
    }

    TEST_CASE("pipeline.outside_threads defaults to 32 and takes 1 to 1024") {
        const char* head = R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
bindings:
  - { topic: a, handler: ledger, key: coordinates }
)";
        CHECK(parse(head).pipeline.outside_threads == 32);
        CHECK(parse(std::string(head) + "pipeline: { outside_threads: 64 }\n")
                  .pipeline.outside_threads == 64);
        const std::string text = errors_of(std::string(head) + "pipeline:\n  outside_threads: 0\n");
        CHECK(text.find("exo.yaml:6: pipeline.outside_threads:") != std::string::npos);
        CHECK(errors_of(std::string(head) + "pipeline: { outside_threads: 1025 }\n")
                  .find("pipeline.outside_threads") != std::string::npos);
    }

    TEST_CASE("bindings[].ordering names its choices, and entity needs a sequence") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
bindings:
  - { topic: a, handler: ledger, key: coordinates, ordering: keys }
  - { topic: b, handler: ledger, key: coordinates, ordering: entity }
)");
        CHECK(text.find("exo.yaml:4: bindings[0].ordering: unknown value 'keys'; expected one of: "
                        "partition, key, entity") != std::string::npos);
        CHECK(text.find("exo.yaml:5: bindings[1].ordering: is entity, but the binding has no "
                        "sequence to name the entity: add sequence: { entity: /pointer, value: "
                        "/pointer }, or use ordering: key") != std::string::npos);
    }

    TEST_CASE("bindings[].on_key_reuse names its choices and defaults to dead_letter") {
        const std::string head = R"(
kafka: { bootstrap_servers: localhost:9092, group_id: g }
postgres: { uri: postgresql://exo@db/exo }
bindings:
)";
        const Config config = parse(head + R"(  - { topic: a, handler: ledger, key: coordinates }
  - { topic: b, handler: ledger, key: coordinates, on_key_reuse: log }
  - { topic: c, handler: ledger, key: coordinates, on_key_reuse: ignore }
)");
        CHECK(config.bindings[0].on_key_reuse == KeyReusePolicy::dead_letter);
        CHECK(config.bindings[1].on_key_reuse == KeyReusePolicy::log);
        CHECK(config.bindings[2].on_key_reuse == KeyReusePolicy::ignore);
        const std::string text =
            errors_of(head +
                      "  - { topic: a, handler: ledger, key: coordinates, on_key_reuse: "
                      "drop }\n");
        CHECK(text.find("exo.yaml:4: bindings[0].on_key_reuse: unknown value 'drop'; expected one "
                        "of: dead_letter, log, ignore") != std::string::npos);
    }

    TEST_CASE("JSON pointers must follow RFC 6901") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings:
  - topic: a
    handler: ledger
    key: { json: payment_id }
    sequence:
      entity: /a~2b
      mode: strcit
)");
        CHECK(text.find("exo.yaml:6: bindings[0].key.json: a JSON pointer (RFC 6901) starts with "
                        "'/': write "
                        "'/payment_id'") != std::string::npos);
        CHECK(text.find("exo.yaml:8: bindings[0].sequence.entity: JSON pointer '/a~2b' has a '~' "
                        "not followed "
                        "by 0 or 1") != std::string::npos);
        CHECK(text.find("exo.yaml:7: bindings[0].sequence.value: required key is missing") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:9: bindings[0].sequence.mode: unknown value 'strcit'; "
                        "expected one of: "
                        "latest, strict (did you mean 'strict'?)") != std::string::npos);
    }

    TEST_CASE("properties exo owns are refused with the reason") {
        const std::string text = errors_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
  properties:
    group.id: other
    enable.auto.commit: true
    enable.auto.offset.store: true
    session.timeout.ms: { ms: 6000 }
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        CHECK(
            text.find("exo.yaml:5: kafka.properties.group.id: property 'group.id' is refused: set "
                      "kafka.group_id instead") != std::string::npos);
        CHECK(
            text.find(
                "exo.yaml:6: kafka.properties.enable.auto.commit: property 'enable.auto.commit' is "
                "refused: exo owns it") != std::string::npos);
        CHECK(text.find("exo.yaml:7: kafka.properties.enable.auto.offset.store: property "
                        "'enable.auto.offset.store' is refused: exo owns it") != std::string::npos);
        CHECK(text.find("exo.yaml:8: kafka.properties.session.timeout.ms: expected a string, "
                        "number or boolean, "
                        "got a mapping") != std::string::npos);
    }

    TEST_CASE("${VAR} is replaced before the value is converted") {
        const Config c = parse(R"(
kafka:
  bootstrap_servers: ${KAFKA}
  group_id: ${GROUP:-exo-default}
  properties: { client.id: "${HOST}-${PID}" }
redis:
  port: ${REDIS_PORT}
  password: "${REDIS_PASSWORD:-}"
  host: ${EMPTY:-fallback}
postgres:
  uri: "postgresql://${PGUSER:-exo}@localhost/exo?x=$${literal}&y=pa$$word"
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)",
                               env_of({{"KAFKA", "k1:9092,k2:9092"},
                                       {"REDIS_PORT", "6390"},
                                       {"HOST", "box"},
                                       {"PID", "7"},
                                       {"EMPTY", ""}}));
        CHECK(c.kafka.bootstrap_servers == "k1:9092,k2:9092");
        CHECK(c.kafka.group_id == "exo-default");
        CHECK(c.kafka.properties.at("client.id") == "box-7");
        CHECK(c.redis.port == 6390);
        CHECK(c.redis.password.empty());
        CHECK(c.redis.host == "fallback");
        CHECK(c.postgres.uri == "postgresql://exo@localhost/exo?x=${literal}&y=pa$$word");
    }

    TEST_CASE(
        "redis.username names the ACL user, an empty one means the default user, and one without "
        "redis.password is a problem naming redis.username") {
        const Config acl = parse(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
redis:
  username: ${REDIS_USER}
  password: "${REDIS_PASSWORD}"
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)",
                                 env_of({{"REDIS_USER", "exo-app"}, {"REDIS_PASSWORD", "pw"}}));
        CHECK(acl.redis.username == "exo-app");
        CHECK(acl.redis.password == "pw");

        const Config plain = parse(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
redis: { username: "${REDIS_USER:-}", password: "${REDIS_PASSWORD:-}" }
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)",
                                   env_of({}));
        CHECK(plain.redis.username.empty());
        CHECK(plain.redis.password.empty());

        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
redis:
  host: r
  username: exo-app
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        CHECK(text.find("exo.yaml:4: redis.username: a Redis ACL user needs redis.password too") !=
              std::string::npos);
    }

    TEST_CASE("an unset ${VAR} without a default is a problem naming the path and the variable") {
        const std::string text = errors_of(R"(
kafka:
  bootstrap_servers: ${KAFKA_BOOTSTRAP}
  group_id: g
redis:
  port: ${REDIS_PORT}
  host: ${1BAD}
  password: "${OPEN"
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
)");
        CHECK(text.find("exo.yaml:2: kafka.bootstrap_servers: environment variable KAFKA_BOOTSTRAP "
                        "is not set: "
                        "export it, or give a default as ${KAFKA_BOOTSTRAP:-value}") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:5: redis.port: environment variable REDIS_PORT is not set") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:6: redis.host: ${1BAD} does not name a variable") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:7: redis.password: '${' is never closed") != std::string::npos);
    }

    TEST_CASE("keys are not expanded") {
        const std::string text = errors_of(R"(
kafka: { bootstrap_servers: "k:1", group_id: g }
postgres: { uri: x }
bindings: [{ topic: t, handler: ledger, key: coordinates }]
${SECTION}: {}
)",
                                           env_of({{"SECTION", "redis"}}));
        CHECK(text.find("exo.yaml:4: ${SECTION}: unknown key '${SECTION}'") != std::string::npos);
    }

    TEST_CASE("a completed TTL not shorter than dedup retention is refused") {
        std::string yaml(kMinimal);
        yaml += "claim:\n  completed_ttl_ms: 86400000\n";
        yaml.replace(yaml.find("  uri:"), 0, "  dedup_retention_days: 1\n");
        const std::string text = errors_of(yaml);
        CHECK(text.find("exo.yaml:12: claim.completed_ttl_ms: claim.completed_ttl_ms (86400000 ms) "
                        "must be less "
                        "than postgres.dedup_retention_days (1 days = 86400000 ms)") !=
              std::string::npos);

        std::string short_retention(kMinimal);
        short_retention.replace(short_retention.find("  uri:"), 0, "  dedup_retention_days: 1\n");
        CHECK(errors_of(short_retention)
                  .find("exo.yaml:5: postgres.dedup_retention_days: claim.completed_ttl_ms") !=
              std::string::npos);
    }

    TEST_CASE("a backoff maximum below the initial backoff is refused") {
        std::string yaml(kMinimal);
        yaml += "pipeline: { retry_backoff_initial_ms: 500, retry_backoff_max_ms: 100 }\n";
        CHECK(errors_of(yaml).find(
                  "exo.yaml:10: pipeline.retry_backoff_max_ms: retry_backoff_max_ms (100) must "
                  "be at least retry_backoff_initial_ms (500)") != std::string::npos);
    }

    TEST_CASE("one error lists every problem, one per line, in document order") {
        const ConfigError e = error_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
  propertes: {}
redis:
  port: zero
postgres: { uri: x }
pipeline: { concurrency: 0 }
bindings:
  - { topic: t, handler: nobody, key: { json: id } }
)");
        REQUIRE(e.problems().size() == 5);
        CHECK(e.source() == "exo.yaml");
        const std::string text = e.what();
        CHECK(std::count(text.begin(), text.end(), '\n') == 4);
        CHECK(e.problems()[0].path == "kafka.propertes");
        CHECK(e.problems()[0].line == 4);
        CHECK(e.problems()[1].path == "redis.port");
        CHECK(e.problems()[1].line == 6);
        CHECK(e.problems()[2].path == "pipeline.concurrency");
        CHECK(e.problems()[2].line == 8);
        CHECK(e.problems()[3].path == "bindings[0].handler");
        CHECK(e.problems()[4].path == "bindings[0].key.json");
        CHECK(text.find("exo.yaml:4: kafka.propertes: unknown key 'propertes'; did you mean "
                        "'properties'?\n") == 0);
        CHECK(text.find("\nexo.yaml:10: bindings[0].key.json:") != std::string::npos);
    }

    TEST_CASE("a config error is a usage error") {
        CHECK_THROWS_AS(parse("kafka: 1"), UsageError);
    }

    TEST_CASE("a config file is read from disk with the process environment") {
        const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                          ("exo-config-test-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        const std::filesystem::path file = dir / "exo.yaml";
        {
            std::ofstream out(file);
            out << body(kMinimal) << "redis:\n  port: ${EXO_CONFIG_TEST_PORT}\n";
        }
        ::setenv("EXO_CONFIG_TEST_PORT", "6391", 1);
        const Config c = parse_config_file(file.string(), kHandlers);
        CHECK(c.redis.port == 6391);

        ::unsetenv("EXO_CONFIG_TEST_PORT");
        try {
            parse_config_file(file.string(), kHandlers);
            FAIL("expected a ConfigError");
        } catch (const ConfigError& e) {
            CHECK(std::string(e.what()) == file.string() +
                                               ":11: redis.port: environment variable "
                                               "EXO_CONFIG_TEST_PORT is not set: export it, or "
                                               "give a default as ${EXO_CONFIG_TEST_PORT:-value}");
        }
        std::filesystem::remove_all(dir);
    }

    TEST_CASE("an unreadable config file is an error naming the path") {
        const std::string missing = "/nonexistent/exo-config-test/exo.yaml";
        try {
            parse_config_file(missing, kHandlers);
            FAIL("expected a ConfigError");
        } catch (const ConfigError& e) {
            CHECK(e.source() == missing);
            CHECK(std::string(e.what()).find(missing + ": cannot open the config file") == 0);
        }
        try {
            parse_config_file(std::filesystem::temp_directory_path().string(), kHandlers);
            FAIL("expected a ConfigError");
        } catch (const ConfigError& e) {
            CHECK(std::string(e.what()).find("is a directory") != std::string::npos);
        }
    }
}

namespace {

// kMinimal with `lines` inserted at the top of the postgres section (line 5 on).
std::string with_postgres(std::string_view lines) {
    std::string yaml(kMinimal);
    yaml.replace(yaml.find("  uri:"), 0, lines);
    return yaml;
}

}  // namespace

TEST_SUITE("config") {
    TEST_CASE("postgres session timeouts and keepalives default to bounded values") {
        const Config c = parse(kMinimal);
        CHECK(c.postgres.connect_timeout == 5000ms);
        CHECK(c.postgres.statement_timeout == 60000ms);
        CHECK(c.postgres.lock_timeout == 5000ms);
        CHECK(c.postgres.idle_in_transaction_timeout == 300000ms);
        CHECK(c.postgres.keepalives_idle == 30000ms);
        CHECK(c.postgres.keepalives_interval == 10000ms);
        CHECK(c.postgres.keepalives_count == 3);
        CHECK(c.postgres.tcp_user_timeout == 60000ms);
    }

    TEST_CASE("every postgres session key is read, ${VAR} included") {
        const Config c = parse(with_postgres(R"(  connect_timeout_ms: 3000
  statement_timeout_ms: 20000
  lock_timeout_ms: "${LOCK_MS}"
  idle_in_transaction_timeout_ms: 90000
  keepalives_idle_ms: 15000
  keepalives_interval_ms: 4000
  keepalives_count: 5
  tcp_user_timeout_ms: 35000
)"),
                               env_of({{"LOCK_MS", "1500"}}));
        CHECK(c.postgres.connect_timeout == 3000ms);
        CHECK(c.postgres.statement_timeout == 20000ms);
        CHECK(c.postgres.lock_timeout == 1500ms);
        CHECK(c.postgres.idle_in_transaction_timeout == 90000ms);
        CHECK(c.postgres.keepalives_idle == 15000ms);
        CHECK(c.postgres.keepalives_interval == 4000ms);
        CHECK(c.postgres.keepalives_count == 5);
        CHECK(c.postgres.tcp_user_timeout == 35000ms);
    }

    TEST_CASE("0 turns off each server timeout and leaves each keepalive setting to the OS") {
        const Config c = parse(with_postgres(R"(  statement_timeout_ms: 0
  lock_timeout_ms: 0
  idle_in_transaction_timeout_ms: 0
  keepalives_idle_ms: 0
  keepalives_interval_ms: 0
  keepalives_count: 0
  tcp_user_timeout_ms: 0
)"));
        CHECK(c.postgres.statement_timeout == 0ms);
        CHECK(c.postgres.lock_timeout == 0ms);
        CHECK(c.postgres.idle_in_transaction_timeout == 0ms);
        CHECK(c.postgres.keepalives_idle == 0ms);
        CHECK(c.postgres.keepalives_interval == 0ms);
        CHECK(c.postgres.keepalives_count == 0);
        CHECK(c.postgres.tcp_user_timeout == 0ms);
    }

    TEST_CASE("a connect timeout of 0 or below libpq's 2 s minimum is refused") {
        CHECK(errors_of(with_postgres("  connect_timeout_ms: 0\n"))
                  .find("exo.yaml:5: postgres.connect_timeout_ms: must be at least 2000, got 0") !=
              std::string::npos);
        CHECK(errors_of(with_postgres("  connect_timeout_ms: 1000\n"))
                  .find("exo.yaml:5: postgres.connect_timeout_ms: must be at least 2000") !=
              std::string::npos);
    }

    TEST_CASE("settings libpq takes in whole seconds refuse a value it would round") {
        const ConfigError e = error_of(with_postgres(R"(  connect_timeout_ms: 2500
  keepalives_idle_ms: 1500
  keepalives_interval_ms: 999
  tcp_user_timeout_ms: 1500
)"));
        REQUIRE(e.problems().size() == 3);
        const std::string text = e.what();
        CHECK(text.find("exo.yaml:5: postgres.connect_timeout_ms: libpq takes whole seconds here: "
                        "write a multiple of 1000 (e.g. 3000), got 2500") != std::string::npos);
        CHECK(text.find("exo.yaml:6: postgres.keepalives_idle_ms: libpq takes whole seconds "
                        "here: write a multiple of 1000 (e.g. 2000), got 1500") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:7: postgres.keepalives_interval_ms: libpq takes whole seconds "
                        "here: write a multiple of 1000 (e.g. 1000), got 999") !=
              std::string::npos);
    }

    TEST_CASE("negative or malformed session timeouts are each reported with path and line") {
        const ConfigError e = error_of(with_postgres(R"(  statement_timeout_ms: -1
  lock_timeout_ms: 5s
  idle_in_transaction_timeout_ms: -300000
  tcp_user_timeout_ms: -5
  keepalives_count: three
)"));
        REQUIRE(e.problems().size() == 5);
        const std::string text = e.what();
        CHECK(text.find("exo.yaml:5: postgres.statement_timeout_ms: must be at least 0, got -1") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:6: postgres.lock_timeout_ms: expected a duration in whole "
                        "milliseconds (e.g. 1500), got '5s'; write 5000") != std::string::npos);
        CHECK(text.find("exo.yaml:7: postgres.idle_in_transaction_timeout_ms: must be at least 0, "
                        "got -300000") != std::string::npos);
        CHECK(text.find("exo.yaml:8: postgres.tcp_user_timeout_ms: must be at least 0") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:9: postgres.keepalives_count: expected a whole number") !=
              std::string::npos);
    }

    TEST_CASE("keepalive values beyond what the kernel accepts are refused") {
        const ConfigError e = error_of(with_postgres(R"(  keepalives_idle_ms: 32768000
  keepalives_interval_ms: 40000000
  keepalives_count: 128
)"));
        REQUIRE(e.problems().size() == 3);
        const std::string text = e.what();
        CHECK(
            text.find("exo.yaml:5: postgres.keepalives_idle_ms: must be between 0 and 32767000") !=
            std::string::npos);
        CHECK(text.find("exo.yaml:6: postgres.keepalives_interval_ms: must be between 0 and "
                        "32767000") != std::string::npos);
        CHECK(text.find("exo.yaml:7: postgres.keepalives_count: must be between 0 and 127, got "
                        "128") != std::string::npos);
    }

    TEST_CASE("a statement timeout not above the lock timeout is refused") {
        CHECK(errors_of(with_postgres("  statement_timeout_ms: 5000\n"))
                  .find("exo.yaml:5: postgres.statement_timeout_ms: statement_timeout_ms (5000) "
                        "must be greater than lock_timeout_ms (5000), or a wait for a row lock "
                        "fails as a statement timeout") != std::string::npos);
        // Only the lock timeout given: the problem is named where it was written.
        CHECK(errors_of(with_postgres("  lock_timeout_ms: 90000\n"))
                  .find("exo.yaml:5: postgres.lock_timeout_ms: statement_timeout_ms (60000) must "
                        "be greater than lock_timeout_ms (90000)") != std::string::npos);
        // Either at 0 means no conflict.
        CHECK_NOTHROW(
            parse(with_postgres("  statement_timeout_ms: 0\n  lock_timeout_ms: 90000\n")));
        CHECK_NOTHROW(parse(with_postgres("  statement_timeout_ms: 1000\n  lock_timeout_ms: 0\n")));
    }

    TEST_CASE("a misspelled postgres session key gets a did-you-mean") {
        CHECK(errors_of(with_postgres("  lock_timout_ms: 100\n"))
                  .find("exo.yaml:5: postgres.lock_timout_ms: unknown key 'lock_timout_ms'; did "
                        "you mean 'lock_timeout_ms'?") != std::string::npos);
        CHECK(errors_of(with_postgres("  keepalive_count: 3\n"))
                  .find("did you mean 'keepalives_count'?") != std::string::npos);
    }
}

TEST_SUITE("config") {
    TEST_CASE("a group id too long for the dedup index is refused with its path and line") {
        std::string yaml(kMinimal);
        yaml.replace(yaml.find("exo-ledger"), 10, std::string(600, 'g'));
        const std::string e = errors_of(yaml);
        INFO(e);
        CHECK(e.find("kafka.group_id: is 600 bytes; at most 512") != std::string::npos);
    }

    TEST_CASE("a group id PostgreSQL cannot store is refused") {
        std::string yaml(kMinimal);
        yaml.replace(yaml.find("exo-ledger"), 10, "\"bad\\x00group\"");
        CHECK(errors_of(yaml).find("kafka.group_id: must be valid UTF-8") != std::string::npos);
    }
}

TEST_SUITE("config") {
    TEST_CASE("a NUL byte quoted from the input does not cut the error message short") {
        std::string yaml(kMinimal);
        yaml.replace(yaml.find("topic: payments"), 15, "topic: \"pay\\0ments\"");
        yaml += "pipeline: {concurrency: -1}\n";
        const ConfigError e = error_of(yaml);
        const std::string what = e.what();
        CHECK(what.find('\0') == std::string::npos);
        CHECK(what.find("pipeline.concurrency") != std::string::npos);  // the problem after it
        CHECK(what.find("pay\xEF\xBF\xBDments") != std::string::npos);
    }

    TEST_CASE("a duration with a unit too large for any integer is refused without overflow") {
        std::string yaml(kMinimal);
        yaml += "claim: {lease_ms: 999999999999d}\n";
        CHECK(errors_of(yaml).find("claim.lease_ms") != std::string::npos);
    }
}

namespace {

// kMinimal with `lines` appended to its one binding (line 10 on).
std::string with_binding_lines(std::string_view lines) {
    return std::string(kMinimal) + std::string(lines);
}

}  // namespace

TEST_SUITE("config") {
    TEST_CASE("binding options are read as text with the line of each value") {
        const Config c = parse(with_binding_lines(R"(    options:
      currency: EUR
      max_amount: 100000
      audit: true
      hold_ms: 250
      note: ""
)"));
        const HandlerOptions& o = c.bindings.at(0).options;
        CHECK(o.keys() ==
              std::vector<std::string>{"audit", "currency", "hold_ms", "max_amount", "note"});
        CHECK(o.string("currency") == "EUR");
        CHECK(o.integer("max_amount") == 100000);
        CHECK(o.boolean("audit"));
        CHECK(o.milliseconds("hold_ms") == 250ms);
        CHECK(o.string("note").empty());
        // A bad value is reported at its own line, under the binding's path.
        try {
            o.integer("currency");
            FAIL("expected an OptionError");
        } catch (const OptionError& e) {
            CHECK(std::string(e.what()) ==
                  "exo.yaml:11: bindings[0].options.currency: expected a whole number, got 'EUR'");
        }
        // A missing one at the line of `options:`.
        try {
            o.string("region");
            FAIL("expected an OptionError");
        } catch (const OptionError& e) {
            CHECK(std::string(e.what()) ==
                  "exo.yaml:10: bindings[0].options.region: required option is missing: add it "
                  "under bindings[0].options");
        }
    }

    TEST_CASE("${VAR} is expanded in binding option values, also in a flow map") {
        const Config c = parse(with_binding_lines("    options: { currency: \"${CURRENCY}\", "
                                                  "limit: \"${LIMIT:-10}\" }\n"),
                               env_of({{"CURRENCY", "CHF"}}));
        CHECK(c.bindings.at(0).options.string("currency") == "CHF");
        CHECK(c.bindings.at(0).options.integer("limit") == 10);
        CHECK(errors_of(with_binding_lines("    options:\n      currency: ${CURRENCY}\n"))
                  .find("exo.yaml:11: bindings[0].options.currency: environment variable "
                        "CURRENCY is not set") != std::string::npos);
    }

    TEST_CASE("a nested binding option value is a problem with its path and line") {
        const ConfigError e = error_of(with_binding_lines(R"(    options:
      currency: EUR
      limits: { daily: 5 }
      regions:
        - eu
      fine: 1
)"));
        REQUIRE(e.problems().size() == 2);
        const std::string text = e.what();
        CHECK(text.find("exo.yaml:12: bindings[0].options.limits: options values must be scalars "
                        "(text, numbers, booleans), got a mapping") != std::string::npos);
        CHECK(text.find("exo.yaml:13: bindings[0].options.regions: options values must be "
                        "scalars (text, numbers, booleans), got a list") != std::string::npos);
    }

    TEST_CASE("binding options keys are free, but options itself must be a mapping") {
        // Any key is the handler's: none is "unknown".
        CHECK_NOTHROW(parse(with_binding_lines("    options: { anything_at_all: 1, x.y-z: 2 }\n")));
        CHECK(errors_of(with_binding_lines("    options: [a, b]\n"))
                  .find("exo.yaml:10: bindings[0].options: expected a mapping") !=
              std::string::npos);
        CHECK(errors_of(with_binding_lines("    options:\n      a: 1\n      a: 2\n"))
                  .find("exo.yaml:12: bindings[0].options.a: duplicate key (first given at line "
                        "11)") != std::string::npos);
        CHECK(errors_of(with_binding_lines("    optoins: { a: 1 }\n"))
                  .find("did you mean 'options'?") != std::string::npos);
    }

    TEST_CASE("two bindings of the same handler keep their own options") {
        const Config c = parse(with_binding_lines(R"(    options: { currency: EUR, hold_ms: 250 }
  - topic: payments-us
    handler: ledger
    key: coordinates
    options: { currency: USD }
)"));
        REQUIRE(c.bindings.size() == 2);
        CHECK(c.bindings[0].handler == c.bindings[1].handler);
        CHECK(c.bindings[0].options.string("currency") == "EUR");
        CHECK(c.bindings[0].options.milliseconds("hold_ms", 0ms) == 250ms);
        CHECK(c.bindings[1].options.string("currency") == "USD");
        CHECK(c.bindings[1].options.milliseconds("hold_ms", 0ms) == 0ms);
        try {
            c.bindings[1].options.integer("currency");
            FAIL("expected an OptionError");
        } catch (const OptionError& e) {
            CHECK(std::string(e.what()).find("exo.yaml:14: bindings[1].options.currency:") == 0);
        }
    }

    TEST_CASE("a binding without options has empty options that still name the binding") {
        const Config c = parse(kMinimal);
        const HandlerOptions& o = c.bindings.at(0).options;
        CHECK(o.empty());
        CHECK(o.keys().empty());
        CHECK(o.string("currency", "EUR") == "EUR");
        try {
            o.string("currency");
            FAIL("expected an OptionError");
        } catch (const OptionError& e) {
            CHECK(std::string(e.what()) ==
                  "exo.yaml:7: bindings[0].options.currency: required option is missing: add it "
                  "under bindings[0].options");
        }
        CHECK(parse(with_binding_lines("    options:\n")).bindings.at(0).options.empty());
    }
}

TEST_SUITE("config") {
    TEST_CASE("an idle-in-transaction timeout shorter than a dead-letter step is refused") {
        std::string yaml(kMinimal);
        const std::string uri_line = "  uri: postgresql://exo@localhost/exo";
        yaml.replace(yaml.find(uri_line), uri_line.size(),
                     uri_line + "\n  idle_in_transaction_timeout_ms: 20000");
        CHECK(errors_of(yaml).find("postgres.idle_in_transaction_timeout_ms: must be 0 or at "
                                   "least 60000") != std::string::npos);
    }
}
