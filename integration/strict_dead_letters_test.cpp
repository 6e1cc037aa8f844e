// Dead letters of strict sequences, operated as docs/operations.md says:
// `exo dlq list` shows the letters that have no dedup row (gap timeouts, keyless
// records), `exo dlq replay` replays them exactly once, and a strict entity
// stuck behind a poison record is recovered with `exo sequence advance` and
// `exo dlq replay --entity`. The real `exo` binary against the real servers;
// every test counts the effects, so a record applied twice or lost fails it.
#include <doctest/doctest.h>

#include <csignal>

#include "kafka/producer.hpp"
#include "operations_cli.hpp"

using namespace std::chrono_literals;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using nlohmann::json;
using namespace exo::testing::ops;

namespace {

std::int64_t dlq_end(const PipelineHarness& h) {
    return partition_end(h.bootstrap(), h.topic() + ".dlq");
}

bool has(const exo::testing::FinishedChild& f, const std::string& text) {
    return f.output.find(text) != std::string::npos;
}

std::vector<std::string> keys_of(const json& results) {
    std::vector<std::string> keys;
    for (const auto& r : results)
        keys.push_back(r["key"].is_null() ? "-" : r["key"].get<std::string>());
    return keys;
}

std::string replay_status(const json& results, const std::string& key) {
    for (const auto& r : results)
        if (r["key"] == key) return r["status"];
    return "none";
}

// A strict entity acc-1 whose sequence 2 is a poison (an amount the refusing
// ledger takes for a permanent error). 1 and 4 arrive first: 4 is dead-lettered
// on its gap. Then 3 and 2: 2 is dead-lettered with its row, 3 on the gap
// behind it. So the dead letters are listed 4, 2, 3, not in sequence order,
// and the event ids run backwards (seq 1 is e-9): neither the order of the
// dead letters nor of their keys is the order a replay must keep.
// One daemon consumes both rounds, each whole before the next is produced (a daemon
// per round would add a group join, 3 s on the mock cluster).
void poison_at_two(PipelineHarness& h) {
    {
        const auto config = refusing_config(h);
        const auto registry = refusing_registry();
        exo::testing::RunningDaemon d(config, registry, h.bootstrap());
        h.produce({payment("e-9", "acc-1", 10, 1), payment("e-6", "acc-1", 40, 4)});
        REQUIRE(h.wait_until_consumed(60s));
        h.produce({payment("e-7", "acc-1", 30, 3), payment("e-8", "acc-1", 500, 2)});
        REQUIRE(h.wait_until_consumed(60s));
        d.stop();
    }
    REQUIRE(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 10}});
    REQUIRE(outcome(h, "e-8") == "DEAD_LETTERED");
    REQUIRE(outcome(h, "e-7") == "none");
    REQUIRE(outcome(h, "e-6") == "none");
}

// The operator's scenario: 1 and 3 of acc-1 arrive, 3 waits 2 s for 2 and is
// dead-lettered on the gap without a dedup row; then 2 arrives and applies. One
// daemon consumes both rounds, as poison_at_two's.
void gap_filled_after_timeout(PipelineHarness& h) {
    {
        exo::testing::RunningDaemon d(h.config(), h.registry(), h.bootstrap());
        h.produce({payment("gap-1", "acc-1", 10, 1), payment("gap-3", "acc-1", 30, 3)});
        REQUIRE(h.wait_until_consumed(60s));
        REQUIRE(outcome(h, "gap-3") == "none");
        REQUIRE(dlq_end(h) >= 1);
        h.produce({payment("gap-2", "acc-1", 20, 2)});
        REQUIRE(h.wait_until_consumed(60s));
        d.stop();
    }
    REQUIRE(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 30}});
    REQUIRE(topic_end(h) == 3);
}

std::int64_t last_sequence(const PipelineHarness& h) {
    return h.count(
        "SELECT last_sequence FROM exo_sequences WHERE handler = 'ledger' AND entity = 'acc-1'");
}

}  // namespace

TEST_CASE(
    "a strict record dead-lettered on its gap is listed, and once the gap is filled its replay "
    "applies it exactly once; replaying again, or a key applied since, produces nothing") {
    PipelineHarness h({.name = "ops_gap", .partitions = 1, .gap_timeout = 2000ms});
    const std::string config = write_config(h);
    gap_filled_after_timeout(h);

    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["key"] == "gap-3");
    CHECK(listed[0]["state"] == "NO_DEDUP_ROW");
    CHECK(listed[0]["topic"] == h.topic());
    CHECK(listed[0]["offset"] == 1);
    CHECK(listed[0]["reason"].get<std::string>().find("gap_timeout") != std::string::npos);
    CHECK(listed[0]["dead_lettered_at"].get<std::string>().size() == 24);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--topic", "other", "--json"}))
              .empty());

    auto dry = exo_cli({"dlq", "replay", "--config", config, "--key", "gap-3", "--dry-run"});
    CHECK(dry.exit_code == 0);
    CHECK(has(dry, "would replay gap-3: from its dead letter"));
    CHECK(topic_end(h) == 3);
    CHECK(h.count("SELECT count(*) FROM exo_replays") == 0);

    auto first = exo_cli({"dlq", "replay", "--config", config, "--key", "gap-3", "--json"});
    CHECK(first.exit_code == 0);
    CHECK(replay_status(json_of(first), "gap-3") == "replayed");
    CHECK(topic_end(h) == 4);
    // Before the daemon processed it, the ticket keeps a second run from producing again.
    auto second = exo_cli({"dlq", "replay", "--config", config, "--key", "gap-3"});
    CHECK(second.exit_code == 0);
    CHECK(has(second, "already re-produced"));
    CHECK(topic_end(h) == 4);
    json pending = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(pending.size() == 1);
    CHECK(pending[0]["state"] == "REPLAY_SENT");

    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 60}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(outcome(h, "gap-3") == "APPLIED");
    CHECK(last_sequence(h) == 3);

    auto third = exo_cli({"dlq", "replay", "--config", config, "--key", "gap-3"});
    CHECK(third.exit_code == 0);
    CHECK(has(third, "already replayed"));
    auto all = exo_cli({"dlq", "replay", "--config", config, "--all"});
    CHECK(all.exit_code == 0);
    CHECK(has(all, "nothing to replay"));
    CHECK(topic_end(h) == 4);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());

    // A gap-timed-out key that a later copy of its record applied: its dead
    // letter is settled, and replaying it would only make a duplicate.
    h.produce({payment("gap-5", "acc-1", 50, 5)});
    consume_fixed(h);
    REQUIRE(outcome(h, "gap-5") == "none");
    h.produce({payment("gap-4", "acc-1", 40, 4), payment("gap-5", "acc-1", 50, 5)});
    consume_fixed(h);
    REQUIRE(outcome(h, "gap-5") == "APPLIED");
    const auto end = topic_end(h);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
    auto applied = exo_cli({"dlq", "replay", "--config", config, "--key", "gap-5"});
    CHECK(applied.exit_code == 0);
    CHECK(has(applied, "already applied"));
    CHECK(topic_end(h) == end);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 150}});
}

TEST_CASE(
    "a replay of a gap-timed-out dead letter killed after each of its steps and run again "
    "applies it exactly once") {
    for (const std::string failpoint :
         {"replay_after_ticket", "replay_after_claim_forgotten", "replay_after_produce"}) {
        INFO(failpoint);
        PipelineHarness h({.name = "ops_gapcrash", .partitions = 1, .gap_timeout = 2000ms});
        const std::string config = write_config(h);
        gap_filled_after_timeout(h);
        auto killed = exo_cli({"dlq", "replay", "--config", config, "--key", "gap-3"},
                              {{"EXO_FAILPOINTS", failpoint + "=kill"}});
        CHECK(killed.signal == SIGKILL);
        json pending = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
        REQUIRE(pending.size() == 1);
        CHECK(pending[0]["state"] == "REPLAY_PENDING");

        auto resumed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
        CHECK(resumed.exit_code == 0);
        CHECK(replay_status(json_of(resumed), "gap-3") == "replayed");
        // Killed after the produce: two copies; the dedup row keeps one.
        CHECK(topic_end(h) == (failpoint == "replay_after_produce" ? 5 : 4));
        consume_fixed(h);
        CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 60}});
        CHECK(h.count("SELECT count(*) FROM ledger_entries WHERE event_id = 'gap-3'") == 1);
        CHECK(outcome(h, "gap-3") == "APPLIED");
        CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
    }
}

TEST_CASE(
    "dead letters without a key, missing or over the stored-key limit, are listed by their "
    "record, and replay refuses them without changing anything") {
    PipelineHarness h({.name = "ops_keyless", .partitions = 1});
    const std::string config = write_config(h);
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        producer.produce({h.topic(),
                          0,
                          std::string("acc-1"),
                          R"({"accountId":"acc-1","type":"CREDIT","amount":5,"sequenceId":1})",
                          {}});
        producer.produce({h.topic(),
                          0,
                          std::string("acc-2"),
                          R"({"eventId":")" + std::string(2000, 'x') +
                              R"(","accountId":"acc-2","type":"CREDIT","amount":6,"sequenceId":1})",
                          {}});
        producer.flush(30s);
    }
    h.produce({payment("ok-3", "acc-3", 7, 1)});
    consume_fixed(h);
    REQUIRE(dlq_end(h) >= 2);
    REQUIRE(h.balances() == std::map<std::string, std::int64_t>{{"acc-3", 7}});

    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(listed.size() == 2);
    for (const auto& e : listed) {
        CHECK(e["state"] == "NO_KEY");
        CHECK(e["key"].is_null());
        CHECK(e["topic"] == h.topic());
    }
    CHECK(listed[0]["offset"] == 0);
    CHECK(listed[0]["reason"].get<std::string>().find("payload has no /eventId") !=
          std::string::npos);
    CHECK(listed[1]["offset"] == 1);
    CHECK(listed[1]["reason"].get<std::string>().find("over the limit of 1024") !=
          std::string::npos);
    auto text = exo_cli({"dlq", "list", "--config", config});
    CHECK(has(text, "NO_KEY  " + h.topic() + "/0/0  key -"));

    auto named = exo_cli({"dlq", "replay", "--config", config, "--offset", "0"});
    CHECK(named.exit_code == 1);
    CHECK(has(named, "still derives no idempotency key"));
    auto all = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    CHECK(all.exit_code == 0);  // --all goes past them, saying why
    json results = json_of(all);
    REQUIRE(results.size() == 2);
    for (const auto& r : results) CHECK(r["status"] == "skipped");
    CHECK(topic_end(h) == 3);
    CHECK(h.count("SELECT count(*) FROM exo_replays") == 0);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).size() == 2);
}

TEST_CASE(
    "keyless dead letters of a binding whose key pointer was wrong are replayed exactly once "
    "under the keys they derive once it is fixed") {
    PipelineHarness h({.name = "ops_rekey", .partitions = 1});
    const std::string config = write_config(h);  // the fixed binding: key /eventId
    h.produce({payment("k-1", "acc-1", 10, 1), payment("k-2", "acc-2", 20, 1)});
    {
        exo::Config wrong = h.config();
        wrong.bindings[0].key = {exo::KeySourceKind::json, "/eventID"};
        exo::testing::RunningDaemon d(wrong, h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(60s));
        d.stop();
    }
    REQUIRE(h.balances().empty());
    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(listed.size() == 2);
    CHECK(listed[0]["state"] == "NO_KEY");

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    CHECK(replayed.exit_code == 0);
    json results = json_of(replayed);
    CHECK(keys_of(results) == std::vector<std::string>{"k-1", "k-2"});
    for (const auto& r : results) CHECK(r["status"] == "replayed");
    CHECK(topic_end(h) == 4);
    // Ticketed under their keys: listed as sent, not as keyless any more.
    json sent = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(sent.size() == 2);
    for (const auto& e : sent) CHECK(e["state"] == "REPLAY_SENT");

    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 10}, {"acc-2", 20}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 2);
    auto again = exo_cli({"dlq", "replay", "--config", config, "--all"});
    CHECK(again.exit_code == 0);
    CHECK(has(again, "nothing to replay"));
    CHECK(topic_end(h) == 4);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
    // Named by its record, a letter whose key is applied answers so and produces nothing.
    auto named = exo_cli({"dlq", "replay", "--config", config, "--offset", "0"});
    CHECK(named.exit_code == 0);
    CHECK(has(named, "nothing to replay"));
    CHECK(topic_end(h) == 4);
}

TEST_CASE(
    "a strict entity stuck behind a poison record is recovered by an audited sequence advance "
    "past it and a replay of its later dead letters in sequence order, exactly once") {
    PipelineHarness h({.name = "ops_advance", .partitions = 1, .gap_timeout = 2000ms});
    const std::string config = write_config(h);
    poison_at_two(h);

    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(listed.size() == 3);
    REQUIRE(keys_of(listed) == std::vector<std::string>{"e-6", "e-8", "e-7"});
    CHECK(listed[0]["state"] == "NO_DEDUP_ROW");
    CHECK(listed[1]["state"] == "DEAD_LETTERED");
    CHECK(listed[2]["state"] == "NO_DEDUP_ROW");

    // The procedure of docs/operations.md, "Recovering a strict entity".
    auto plan =
        exo_cli({"dlq", "replay", "--config", config, "--entity", "acc-1", "--dry-run", "--json"});
    CHECK(plan.exit_code == 0);
    CHECK(keys_of(json_of(plan)) == std::vector<std::string>{"e-8", "e-7", "e-6"});

    const std::vector<std::string> advance{"sequence", "advance",  "--config",
                                           config,     "--entity", "acc-1"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = advance;
        args.insert(args.end(), extra.begin(), extra.end());
        return exo_cli(args);
    };
    CHECK(with({"--to", "0", "--reason", "x"}).exit_code == 2);  // backwards
    CHECK(with({"--to", "2"}).exit_code == 2);                   // no reason
    auto dry = with({"--to", "2", "--reason", "x", "--dry-run"});
    CHECK(dry.exit_code == 0);
    CHECK(has(dry, "would advance entity 'acc-1' of handler 'ledger' from 1 to 2"));
    CHECK(last_sequence(h) == 1);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances") == 0);

    auto moved = with({"--to", "2", "--reason", "e-8 carries a wrong amount; refunded by hand",
                       "--by", "ops-test", "--json"});
    CHECK(moved.exit_code == 0);
    json m = json_of(moved);
    CHECK(m["status"] == "advanced");
    CHECK(m["from"] == 1);
    CHECK(m["to"] == 2);
    CHECK(last_sequence(h) == 2);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances WHERE handler = 'ledger' AND"
                  " entity = 'acc-1' AND from_sequence = 1 AND to_sequence = 2 AND reason ="
                  " 'e-8 carries a wrong amount; refunded by hand' AND advanced_by = 'ops-test'"
                  " AND advanced_from LIKE '%/exo-%' AND advanced_at <= now()") == 1);

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--entity", "acc-1", "--json"});
    CHECK(replayed.exit_code == 0);
    json results = json_of(replayed);
    CHECK(keys_of(results) == std::vector<std::string>{"e-8", "e-7", "e-6"});
    CHECK(replay_status(results, "e-8") == "skipped");  // at or below the advanced sequence
    CHECK(replay_status(results, "e-7") == "replayed");
    CHECK(replay_status(results, "e-6") == "replayed");
    CHECK(topic_end(h) == 6);

    consume_refusing_large_payments(h);  // the cause of e-8 is not fixed, and need not be
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 80}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(outcome(h, "e-7") == "APPLIED");
    CHECK(outcome(h, "e-6") == "APPLIED");
    CHECK(outcome(h, "e-8") == "DEAD_LETTERED");
    CHECK(last_sequence(h) == 4);

    // Done: running the procedure again changes nothing.
    auto again = exo_cli({"dlq", "replay", "--config", config, "--entity", "acc-1", "--json"});
    CHECK(again.exit_code == 0);
    CHECK(keys_of(json_of(again)) == std::vector<std::string>{"e-8"});
    CHECK(topic_end(h) == 6);
    CHECK(with({"--to", "2", "--reason", "x"}).exit_code == 2);  // 4 now: backwards
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances") == 1);
}

TEST_CASE(
    "a strict entity stuck behind a poison record whose cause is fixed is recovered by replaying "
    "its dead letters in sequence order, exactly once") {
    PipelineHarness h({.name = "ops_entity", .partitions = 1, .gap_timeout = 2000ms});
    const std::string config = write_config(h);
    poison_at_two(h);

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--entity", "acc-1", "--json"});
    CHECK(replayed.exit_code == 0);
    json results = json_of(replayed);
    CHECK(keys_of(results) == std::vector<std::string>{"e-8", "e-7", "e-6"});
    for (const auto& r : results) CHECK(r["status"] == "replayed");
    // Produced in sequence order, so the daemon never has to wait for a gap.
    auto records = exo::testing::read_topic(h.bootstrap(), h.topic(), 7);
    REQUIRE(records.size() == 7);
    CHECK(records[4].value.find("\"e-8\"") != std::string::npos);
    CHECK(records[5].value.find("\"e-7\"") != std::string::npos);
    CHECK(records[6].value.find("\"e-6\"") != std::string::npos);

    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 580}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 4);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 4);
    CHECK(last_sequence(h) == 4);
    CHECK(dlq_end(h) == 3);  // nothing dead-lettered again

    auto again = exo_cli({"dlq", "replay", "--config", config, "--entity", "acc-1"});
    CHECK(again.exit_code == 0);
    CHECK(has(again, "nothing to replay"));
    CHECK(topic_end(h) == 7);
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
}
