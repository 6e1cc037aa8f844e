// `exo audit` (docs/operations.md) run as the real `exo` binary against a
// daemon's results on the real servers: duplicates, stale records (sequence
// latest mode), dead letters (a payment above the ledger's max_amount, and a
// payload that is not JSON, which derives no key), records produced after the
// daemon stopped, and then a deleted and a forged dedup row; and a key reused
// for another event under on_key_reuse: log (issue 34 part 2).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kafka/producer.hpp"
#include "operations_cli.hpp"

using namespace std::chrono_literals;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using nlohmann::json;
using namespace exo::testing::ops;

namespace {

void produce_not_json(const PipelineHarness& h) {
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    producer.produce({h.topic(), 0, std::nullopt, "not json {", {}});
    producer.flush(30s);
}

}  // namespace

TEST_CASE(
    "exo audit accounts for applied, stale, duplicate, dead-lettered and unreached records, and "
    "fails naming a record whose dedup row was deleted and a row whose record is not there") {
    PipelineHarness h({.name = "ops_audit", .partitions = 1, .mode = exo::SequenceMode::latest});
    h.produce({payment("ok-1", "acc-1", 10, 1),      // 0 applied
               payment("ok-2", "acc-1", 20, 3),      // 1 applied
               payment("old-3", "acc-1", 30, 2),     // 2 stale: acc-1 is at 3
               payment("ok-1", "acc-1", 10, 1),      // 3 duplicate of offset 0
               payment("big-4", "acc-2", 500, 1)});  // 4 dead-lettered: above max_amount
    produce_not_json(h);                             // 5 dead-lettered without a key
    h.produce({payment("ok-5", "acc-3", 40, 1)});    // 6 applied
    consume_refusing_large_payments(h);
    REQUIRE(outcome(h, "old-3") == "STALE");
    REQUIRE(outcome(h, "big-4") == "DEAD_LETTERED");
    const std::string config = write_config(h);
    const std::vector<std::string> audit = {"audit", "--config", config, "--topic", h.topic()};
    auto with = [&](std::vector<std::string> more) {
        auto args = audit;
        args.insert(args.end(), more.begin(), more.end());
        return args;
    };

    auto clean = exo_cli(with({"--json"}));
    CHECK(clean.exit_code == 0);
    json j = json_of(clean);
    CHECK(j["records"] == 7);
    CHECK(j["applied"] == 3);
    CHECK(j["stale"] == 1);
    CHECK(j["duplicate"] == 1);
    CHECK(j["dead_lettered"] == 2);
    CHECK(j["not_reached"] == 0);
    CHECK(j["unaccounted"] == 0);
    CHECK(j["rows_without_record"] == 0);
    CHECK(j["accounted"] == true);
    CHECK(j["ranges"][0]["from"] == 0);
    CHECK(j["ranges"][0]["to"] == 6);
    CHECK(j["ranges"][0]["committed"] == 7);
    // Chunks of two records: a duplicate and its first copy in different lookups.
    auto small = exo_cli(with({"--chunk", "2", "--json"}));
    CHECK(small.exit_code == 0);
    CHECK(json_of(small)["duplicate"] == 1);
    CHECK(json_of(small)["applied"] == 3);

    // Records the group has not consumed yet are not reached, not missing.
    h.produce({payment("ok-6", "acc-4", 1, 1), payment("ok-7", "acc-4", 2, 2)});
    j = json_of(exo_cli(with({"--json"})));
    CHECK(j["records"] == 9);
    CHECK(j["not_reached"] == 2);
    CHECK(j["accounted"] == true);
    auto part = exo_cli(with({"--partition", "0", "--from", "1", "--to", "3", "--json"}));
    CHECK(part.exit_code == 0);
    j = json_of(part);
    CHECK(j["records"] == 3);
    CHECK(j["applied"] == 1);
    CHECK(j["stale"] == 1);
    CHECK(j["duplicate"] == 1);

    // A dedup row lost: its record is applied by nothing the audit can see.
    REQUIRE(h.count("WITH d AS (DELETE FROM exo_processed WHERE idempotency_key = 'ok-2'"
                    " RETURNING 1) SELECT count(*) FROM d") == 1);
    // And a forged row at ok-5's record, whose key that record does not derive.
    REQUIRE(h.count("WITH i AS (INSERT INTO exo_processed (consumer_group, idempotency_key,"
                    " fencing_token, topic, kafka_partition, kafka_offset, outcome)"
                    " VALUES ('" +
                    h.config().kafka.group_id + "', 'ghost', 1, '" + h.topic() +
                    "', 0, 6, 'APPLIED') RETURNING 1) SELECT count(*) FROM i") == 1);
    auto broken = exo_cli(with({"--json"}));
    CHECK(broken.exit_code == 4);
    j = json_of(broken);
    CHECK(j["accounted"] == false);
    CHECK(j["unaccounted"] == 1);
    CHECK(j["applied"] == 2);
    CHECK(j["rows_without_record"] == 1);
    REQUIRE(j["problems"].size() == 2);
    CHECK(j["problems"][0]["key"] == "ok-2");
    CHECK(j["problems"][0]["offset"] == 1);
    CHECK(j["problems"][0]["why"].get<std::string>().find("has no dedup row") != std::string::npos);
    CHECK(j["problems"][1]["key"] == "ghost");
    CHECK(j["problems"][1]["offset"] == 6);
    CHECK(j["problems"][1]["why"].get<std::string>().find("derives another key") !=
          std::string::npos);
    // The same problems when the rows come in cursor pages of one.
    auto paged = exo_cli(with({"--chunk", "1", "--json"}));
    CHECK(paged.exit_code == 4);
    CHECK(json_of(paged)["problems"] == j["problems"]);
    auto text = exo_cli(audit);
    CHECK(text.exit_code == 4);
    CHECK(text.output.find("unaccounted " + h.topic() +
                           "/0/1 key ok-2: key 'ok-2' has no dedup "
                           "row") != std::string::npos);
    CHECK(text.output.find("NOT everything is accounted for") != std::string::npos);
}

TEST_CASE(
    "exo audit refuses a topic without a binding, an unknown partition or range, and says "
    "PostgreSQL is down") {
    PipelineHarness h({.name = "ops_audit_errors", .partitions = 1});
    h.produce({payment("ok-1", "acc-1", 10, 1)});
    const std::string config = write_config(h);

    auto unbound = exo_cli({"audit", "--config", config, "--topic", "elsewhere"});
    CHECK(unbound.exit_code == 2);
    CHECK(unbound.output.find("exo audit: topic 'elsewhere' has no binding in this config") !=
          std::string::npos);
    auto partition =
        exo_cli({"audit", "--config", config, "--topic", h.topic(), "--partition", "3"});
    CHECK(partition.exit_code == 2);
    CHECK(partition.output.find("has partitions 0..0") != std::string::npos);
    auto range = exo_cli({"audit", "--config", config, "--topic", h.topic(), "--to", "5"});
    CHECK(range.exit_code == 2);
    CHECK(range.output.find("--to 5 is outside the range: partition 0 of topic '" + h.topic() +
                            "' holds offsets 0..0") != std::string::npos);
    CHECK(exo_cli({"audit", "--config", config}).exit_code == 2);

    std::string yaml = h.config_yaml();
    const std::string uri = h.postgres_uri();
    REQUIRE(yaml.find(uri) != std::string::npos);
    yaml.replace(yaml.find(uri), uri.size(), "postgresql://exo@127.0.0.1:1/exo");
    const std::string down = "/tmp/" + h.schema() + "-nopg.yaml";
    std::ofstream(down) << yaml;
    auto no_pg = exo_cli({"audit", "--config", down, "--topic", h.topic()});
    CHECK(no_pg.exit_code == 1);
    CHECK(no_pg.output.find("exo audit: failed: PostgreSQL cannot be reached before the audit "
                            "started") != std::string::npos);
    CHECK(no_pg.output.find("start it or fix postgres.uri") != std::string::npos);
}

TEST_CASE(
    "exo audit passes a byte-identical redelivery as a duplicate and fails on a key reused with a "
    "different payload under on_key_reuse log, naming the key and both fingerprints") {
    // key_reuse_test.cpp's event e5, sent for two accounts; fingerprints computed by
    // python3 -c 'import hashlib; print(hashlib.sha256(b"<value>").hexdigest()[:32])'.
    const std::string account_a =
        R"({"eventId":"e5","accountId":"acc-A","type":"CREDIT","amount":5,"sequenceId":1})";
    const std::string fingerprint_a = "103cd57e210e5859141b189db47ed70e";
    const std::string account_b =
        R"({"eventId":"e5","accountId":"acc-B","type":"CREDIT","amount":5,"sequenceId":1})";
    const std::string fingerprint_b = "42ea9f3deaab7108d010b4a76e626452";
    PipelineHarness h({.name = "ops_audit_reuse", .partitions = 1, .with_sequence = false});
    h.mutable_config().bindings[0].on_key_reuse = exo::KeyReusePolicy::log;
    auto produce = [&](const std::string& value) {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        producer.produce({h.topic(), 0, std::nullopt, value, {}});
        producer.flush(30s);
    };
    // The audit's config as the daemon's: the policy is not what the audit reads,
    // but an operator's file would say it.
    const std::string config = write_config(h);
    std::ofstream(config, std::ios::app) << "    on_key_reuse: log\n";
    const std::vector<std::string> audit = {"audit",   "--config", config,
                                            "--topic", h.topic(),  "--json"};

    produce(account_a);  // 0 applied
    produce(account_a);  // 1 a redelivery: a plain duplicate
    consume_fixed(h);
    REQUIRE(outcome(h, "e5") == "APPLIED");
    auto clean = exo_cli(audit);
    CHECK(clean.exit_code == 0);
    json j = json_of(clean);
    CHECK(j["applied"] == 1);
    CHECK(j["duplicate"] == 1);
    CHECK(j["key_reused"] == 0);
    CHECK(j["accounted"] == true);

    produce(account_b);  // 2 another event under e5: finished as a duplicate, never applied
    consume_fixed(h);
    auto reused = exo_cli(audit);
    CHECK(reused.exit_code == 4);
    j = json_of(reused);
    CHECK(j["records"] == 3);
    CHECK(j["applied"] == 1);
    CHECK(j["duplicate"] == 1);
    CHECK(j["key_reused"] == 1);
    CHECK(j["unaccounted"] == 0);
    CHECK(j["accounted"] == false);
    REQUIRE(j["problems"].size() == 1);
    CHECK(j["problems"][0]["verdict"] == "key_reused");
    CHECK(j["problems"][0]["key"] == "e5");
    CHECK(j["problems"][0]["offset"] == 2);
    const std::string why = "key reused with a different payload: this copy " + fingerprint_b +
                            ", the applied one " + fingerprint_a + " at " + h.topic() + "/0/0";
    CHECK(j["problems"][0]["why"].get<std::string>().find(why) == 0);
    auto text = exo_cli({"audit", "--config", config, "--topic", h.topic()});
    CHECK(text.exit_code == 4);
    CHECK(text.output.find("key reused " + h.topic() + "/0/2 key e5: " + why) != std::string::npos);
    CHECK(text.output.find("1 key reused (never applied)") != std::string::npos);
}
