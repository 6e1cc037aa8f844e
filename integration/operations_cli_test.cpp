// Operating exo (docs/operations.md): `exo inspect`, `exo dlq list` and
// `exo dlq replay` run as the real `exo` binary against the real servers, with
// dead letters made by a daemon whose ledger refuses large payments (its
// binding's max_amount) and replays processed by a daemon without that limit:
// the cause fixed. Each replay test counts the effects, so a replay applied
// twice or lost fails it.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>

#include <exo/testing.hpp>
#include "child_process.hpp"
#include "operations_cli.hpp"
#include "ops/replayed_record.hpp"
#include "pg/process_identity.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;
using nlohmann::json;
using namespace exo::testing::ops;

TEST_CASE(
    "exo inspect shows an applied key's dedup row, process, claim and sequence, and exits 3 for "
    "an unknown key") {
    PipelineHarness h({.name = "ops_inspect", .partitions = 1});
    h.produce({payment("ok-1", "acc-1", 50, 1)});
    consume_fixed(h);
    const std::string config = write_config(h);

    auto applied = exo_cli({"inspect", "--config", config, "--key", "ok-1", "--json"});
    CHECK(applied.exit_code == 0);
    json j = json_of(applied);
    CHECK(j["known"] == true);
    CHECK(j["key"] == "ok-1");
    CHECK(j["row"]["outcome"] == "APPLIED");
    CHECK(j["row"]["topic"] == h.topic());
    CHECK(j["row"]["partition"] == 0);
    CHECK(j["row"]["offset"] == 0);
    CHECK(j["row"]["fencing_token"].get<std::int64_t>() > 0);
    CHECK(j["row"]["processed_at"].get<std::string>().size() == 24);
    // The daemon ran in this very process: its identity is in the row.
    CHECK(j["row"]["applied_by"] == exo::process_identity());
    CHECK(j["claim"]["state"] == "COMPLETED");
    CHECK(j["claim"]["token"] == std::to_string(j["row"]["fencing_token"].get<std::int64_t>()));
    CHECK(j["claim"]["ttl_ms"].get<std::int64_t>() > 0);
    CHECK(j["sequence"]["handler"] == "ledger");
    CHECK(j["sequence"]["entity"] == "acc-1");
    CHECK(j["sequence"]["last_sequence"] == 1);
    CHECK(j["replay"].is_null());

    auto text = exo_cli({"inspect", "--config", config, "--key", "ok-1"});
    CHECK(text.exit_code == 0);
    CHECK(text.output.find("outcome: APPLIED") != std::string::npos);
    CHECK(text.output.find("applied by: " + exo::process_identity()) != std::string::npos);

    auto unknown = exo_cli({"inspect", "--config", config, "--key", "never-seen", "--json"});
    CHECK(unknown.exit_code == 3);
    CHECK(json_of(unknown)["known"] == false);

    auto usage = exo_cli({"inspect", "--config", config});
    CHECK(usage.exit_code == 2);
    CHECK(usage.output.find("--key is required") != std::string::npos);
}

TEST_CASE("exo dlq list shows each dead letter with its reason and origin, by topic and age") {
    PipelineHarness h({.name = "ops_list", .partitions = 1});
    h.produce({payment("ok-1", "acc-1", 50, 1), payment("big-2", "acc-2", 500, 1),
               payment("big-3", "acc-3", 700, 1)});
    consume_refusing_large_payments(h);
    const std::string config = write_config(h);

    json all = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(all.size() == 2);
    CHECK(all[0]["key"] == "big-2");
    CHECK(all[0]["state"] == "DEAD_LETTERED");
    CHECK(all[0]["topic"] == h.topic());
    CHECK(all[0]["partition"] == 0);
    CHECK(all[0]["offset"] == 1);
    CHECK(all[0]["reason"].get<std::string>().find("max_amount 100") != std::string::npos);
    CHECK(all[0]["dead_lettered_by"] == exo::process_identity());
    CHECK(all[1]["key"] == "big-3");
    CHECK(all[1]["offset"] == 2);

    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--topic", "other", "--json"}))
              .empty());
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--topic", h.topic(), "--json"}))
              .size() == 2);
    h.count(
        "UPDATE exo_processed SET processed_at = now() - interval '2 days'"
        " WHERE idempotency_key = 'big-2' RETURNING 1");
    json recent = json_of(exo_cli({"dlq", "list", "--config", config, "--since", "1d", "--json"}));
    REQUIRE(recent.size() == 1);
    CHECK(recent[0]["key"] == "big-3");

    auto text = exo_cli({"dlq", "list", "--config", config});
    CHECK(text.exit_code == 0);
    CHECK(text.output.find("key big-3") != std::string::npos);
    CHECK(text.output.find("2 dead letter(s)") != std::string::npos);
    CHECK(exo_cli({"dlq", "list", "--config", config, "--since", "15"}).exit_code == 2);

    // Without a way to Kafka (an embedded mock cluster no other process can
    // reach), the list still has what PostgreSQL holds, and says what it lacks.
    std::string yaml = h.config_yaml();
    const std::string servers = "  bootstrap_servers: \"" + h.bootstrap() + "\"\n";
    REQUIRE(yaml.find(servers) != std::string::npos);
    yaml.replace(yaml.find(servers), servers.size(), "  mock: {brokers: 1}\n");
    const std::string unreachable = "/tmp/" + h.schema() + "-nokafka.yaml";
    std::ofstream(unreachable) << yaml;
    auto partial = exo_cli({"dlq", "list", "--config", unreachable, "--json"});
    CHECK(partial.exit_code == 1);
    CHECK(partial.output.find("dead letters without a dedup row (gap timeouts, keyless records) "
                              "are missing") != std::string::npos);
    CHECK(json_of(partial).size() == 2);
}

TEST_CASE(
    "a replayed dead letter is applied exactly once after its cause is fixed; a dry run and "
    "replaying twice change nothing") {
    PipelineHarness h({.name = "ops_replay", .partitions = 1});
    h.produce({payment("ok-1", "acc-1", 50, 1), payment("big-2", "acc-2", 500, 1)});
    consume_refusing_large_payments(h);
    const std::string config = write_config(h);
    REQUIRE(outcome(h, "big-2") == "DEAD_LETTERED");
    REQUIRE(topic_end(h) == 2);

    auto dry = exo_cli({"dlq", "replay", "--config", config, "--key", "big-2", "--dry-run"});
    CHECK(dry.exit_code == 0);
    CHECK(dry.output.find("would replay big-2: from its dead letter") != std::string::npos);
    CHECK(outcome(h, "big-2") == "DEAD_LETTERED");
    CHECK(topic_end(h) == 2);
    CHECK(h.count("SELECT count(*) FROM exo_replays") == 0);

    auto first = exo_cli({"dlq", "replay", "--config", config, "--key", "big-2", "--json"});
    CHECK(first.exit_code == 0);
    json result = json_of(first);
    REQUIRE(result.size() == 1);
    CHECK(result[0]["status"] == "replayed");
    CHECK(topic_end(h) == 3);
    auto records = exo::testing::read_topic(h.bootstrap(), h.topic(), 3);
    REQUIRE(records.size() == 3);
    REQUIRE(records[2].header(exo::kReplayedFromHeader) != nullptr);
    CHECK(records[2].header(exo::kReplayedFromHeader)->value == h.topic() + "/0/1");
    CHECK(records[2].value == records[1].value);
    CHECK(records[2].header("exo-error") == nullptr);

    // Before the daemon processed it: the replay is known and not sent twice.
    auto second = exo_cli({"dlq", "replay", "--config", config, "--key", "big-2"});
    CHECK(second.exit_code == 0);
    CHECK(second.output.find("already re-produced") != std::string::npos);
    CHECK(topic_end(h) == 3);
    json pending = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(pending.size() == 1);
    CHECK(pending[0]["state"] == "REPLAY_SENT");

    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 50}, {"acc-2", 500}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries WHERE event_id = 'big-2'") == 1);
    CHECK(outcome(h, "big-2") == "APPLIED");

    // After: still once, and the daemon finds nothing new.
    auto third = exo_cli({"dlq", "replay", "--config", config, "--key", "big-2"});
    CHECK(third.exit_code == 0);
    CHECK(third.output.find("already replayed") != std::string::npos);
    CHECK(topic_end(h) == 3);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
    auto inspected = json_of(exo_cli({"inspect", "--config", config, "--key", "big-2", "--json"}));
    CHECK(inspected["replay"]["finished_outcome"] == "APPLIED");
    CHECK(exo_cli({"dlq", "replay", "--config", config, "--key", "never-seen"}).exit_code == 3);
    CHECK(exo_cli({"dlq", "replay", "--config", config}).exit_code == 2);
}

TEST_CASE(
    "a replay killed after each of its steps and run again applies every record exactly once "
    "and loses none") {
    PipelineHarness h({.name = "ops_crash", .partitions = 1});
    h.produce({payment("big-1", "acc-1", 500, 1), payment("big-2", "acc-2", 600, 1),
               payment("big-3", "acc-3", 700, 1)});
    consume_refusing_large_payments(h);
    const std::string config = write_config(h);
    REQUIRE(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'DEAD_LETTERED'") == 3);

    const std::vector<std::pair<std::string, std::string>> crashes{
        {"big-1", "replay_after_ticket"},
        {"big-2", "replay_after_claim_forgotten"},
        {"big-3", "replay_after_produce"}};
    for (const auto& crash : crashes) {
        // Named copies, not a structured binding: INFO captures them in a lambda.
        const std::string& key = crash.first;
        const std::string& failpoint = crash.second;
        auto killed = exo_cli({"dlq", "replay", "--config", config, "--key", key},
                              {{"EXO_FAILPOINTS", failpoint + "=kill"}});
        INFO(failpoint << ": " << killed.output);
        CHECK(killed.signal == SIGKILL);
        CHECK(outcome(h, key) == "none");  // the row is a ticket now: nothing is lost
    }
    CHECK(topic_end(h) == 4);  // only big-3's replay reached Kafka
    json pending = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(pending.size() == 3);
    for (const auto& entry : pending) CHECK(entry["state"] == "REPLAY_PENDING");

    auto resumed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    CHECK(resumed.exit_code == 0);
    json results = json_of(resumed);
    REQUIRE(results.size() == 3);
    for (const auto& r : results) CHECK(r["status"] == "replayed");
    CHECK(topic_end(h) == 7);  // big-3 twice: the dedup row must keep it once

    consume_fixed(h);
    CHECK(h.balances() ==
          std::map<std::string, std::int64_t>{{"acc-1", 500}, {"acc-2", 600}, {"acc-3", 700}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 3);
    CHECK(partition_end(h.bootstrap(), h.topic() + ".dlq") == 3);  // no new dead letter
    CHECK(replayed_copies(h, "big-3", 7) == 2);

    auto again = exo_cli({"dlq", "replay", "--config", config, "--all"});
    CHECK(again.exit_code == 0);
    CHECK(again.output.find("nothing to replay") != std::string::npos);
    CHECK(topic_end(h) == 7);
}

TEST_CASE(
    "two replays of every dead letter at once while the daemon runs apply each record exactly "
    "once") {
    PipelineHarness h({.name = "ops_race", .partitions = 1});
    std::vector<exo::PaymentMessage> payments;
    std::map<std::string, std::int64_t> expected;
    for (int i = 1; i <= 4; ++i) {
        const std::string account = "acc-" + std::to_string(i);
        payments.push_back(payment("big-" + std::to_string(i), account, 100 * i + 100, 1));
        expected[account] = 100 * i + 100;
    }
    h.produce(payments);
    consume_refusing_large_payments(h);
    const std::string config = write_config(h);
    REQUIRE(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'DEAD_LETTERED'") == 4);

    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(exo::testing::eventually([&] { return d.ready(); }, 30s));
    // Two operators at once: whatever each finds, every record is processed once.
    const std::string log_a = "/tmp/" + exo::testing::unique_name("ops_race_a") + ".log";
    const std::string log_b = "/tmp/" + exo::testing::unique_name("ops_race_b") + ".log";
    const std::vector<std::string> replay_all{"dlq", "replay", "--config", config, "--all"};
    exo::testing::ChildProcess a(exo::testing::exo_binary(), replay_all, {}, log_a);
    exo::testing::ChildProcess b(exo::testing::exo_binary(), replay_all, {}, log_b);
    auto status_a = a.wait(90s), status_b = b.wait(90s);
    REQUIRE(status_a.has_value());
    REQUIRE(status_b.has_value());
    CHECK(WIFEXITED(*status_a));
    CHECK(WEXITSTATUS(*status_a) == 0);
    CHECK(WIFEXITED(*status_b));
    CHECK(WEXITSTATUS(*status_b) == 0);

    REQUIRE(h.wait_until_consumed(60s));
    CHECK(exo::testing::eventually([&] { return h.balances() == expected; }, 30s));
    d.stop();
    CHECK(h.balances() == expected);
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 4);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 4);
    CHECK(partition_end(h.bootstrap(), h.topic() + ".dlq") == 4);  // no new dead letter
    CHECK(topic_end(h) >= 8);  // every record replayed at least once
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
}
