// Replay trusts only the letters exo wrote (issue 31, item 6): whoever can produce
// to a dead-letter topic can write a letter with exo's headers, the key and
// coordinates of a real dead letter and a value of their choice (replay takes the
// newest copy), or a new letter for `dlq replay --all` to pick up. exo records the
// SHA-256 of each letter's key and value when it writes it
// (sql/0012_dead_letter_digest.sql), and replay refuses a letter that does not
// match, naming it. The real `exo` binary against the real servers; the forger is
// another Kafka client.
#include <doctest/doctest.h>

#include "kafka/producer.hpp"
#include "operations_cli.hpp"
#include "pg/dead_letter_record.hpp"

using namespace std::chrono_literals;
using exo::testing::last_header;
using exo::testing::payment;
using exo::testing::payment_json;
using exo::testing::PipelineHarness;
using nlohmann::json;
using namespace exo::testing::ops;

namespace {

json result_of(const json& results, const std::string& key) {
    for (const auto& r : results)
        if (r["key"] == key) return r;
    return json{{"status", "none"}, {"detail", ""}};
}

}  // namespace

TEST_CASE(
    "dlq replay refuses a dead letter whose value another client replaced and a letter exo never "
    "wrote, naming each with both digests, and replays the genuine letters once") {
    PipelineHarness h({.name = "dlq_verify", .partitions = 1});
    const std::string config = write_config(h);
    const std::string group = h.config().kafka.group_id;
    h.produce({payment("real-1", "acc-1", 500, 1), payment("real-2", "acc-2", 600, 1),
               payment("ok-3", "acc-3", 10, 1)});
    consume_refusing_large_payments(h);
    REQUIRE(outcome(h, "real-1") == "DEAD_LETTERED");
    REQUIRE(outcome(h, "real-2") == "DEAD_LETTERED");
    REQUIRE(outcome(h, "ok-3") == "APPLIED");

    const auto letters = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 2);
    REQUIRE(letters.size() == 2);
    const auto& genuine_1 =
        letters[last_header(letters[0], "exo-idempotency-key")->value == "real-1" ? 0 : 1];
    REQUIRE(last_header(genuine_1, "exo-idempotency-key")->value == "real-1");
    const std::string forged_value = payment_json("real-1", "acc-1", 99);  // the same key
    {
        exo::KafkaProducer forger(exo::ProducerOptions{h.bootstrap(), {}});
        // real-1's letter again, exo's headers and all, with another amount: the newest copy.
        forger.produce({h.topic() + ".dlq", genuine_1.partition.value, genuine_1.key, forged_value,
                        genuine_1.headers});
        // A letter of a record that was never dead-lettered (ok-3's offset, a new key).
        forger.produce({h.topic() + ".dlq",
                        0,
                        std::string("acc-9"),
                        payment_json("injected-9", "acc-9", 90),
                        {{"exo-error", "looks real"},
                         {"exo-original-topic", h.topic()},
                         {"exo-original-partition", "0"},
                         {"exo-original-offset", "2"},
                         {"exo-consumer-group", group},
                         {"exo-idempotency-key", "injected-9"}}});
        forger.flush(30s);
    }
    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    CHECK(listed.size() == 3);  // listed: the operator sees it, replay refuses it

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    INFO("replay: " << replayed.output);
    CHECK(replayed.exit_code == 1);
    json results = json_of(replayed);
    CHECK(result_of(results, "real-2")["status"] == "replayed");
    const json forged = result_of(results, "real-1");
    CHECK(forged["status"] == "skipped");
    const std::string forged_detail = forged["detail"];
    CHECK(forged_detail.find("key 'real-1' (" + h.topic() + "/0/0)") != std::string::npos);
    CHECK(forged_detail.find(
              exo::dead_letter_digest(genuine_1.key, genuine_1.value, genuine_1.headers)) !=
          std::string::npos);  // what exo recorded
    CHECK(forged_detail.find(
              exo::dead_letter_digest(genuine_1.key, forged_value, genuine_1.headers)) !=
          std::string::npos);  // what the letter has
    const json injected = result_of(results, "injected-9");
    CHECK(injected["status"] == "skipped");
    const std::string injected_detail = injected["detail"];
    CHECK(injected_detail.find("key 'injected-9' (" + h.topic() + "/0/2)") != std::string::npos);
    CHECK(injected_detail.find("not one exo recorded writing") != std::string::npos);
    // The injected letter as read back: its digest is named.
    const auto all = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 4);
    REQUIRE(all.size() == 4);
    for (const auto& l : all)
        if (l.value.find("injected-9") != std::string::npos)
            CHECK(injected_detail.find(exo::dead_letter_digest(l.key, l.value, l.headers)) !=
                  std::string::npos);
    // Nothing of either was produced: only real-2's copy.
    CHECK(topic_end(h) == 4);
    CHECK(outcome(h, "real-1") == "DEAD_LETTERED");  // its row stays for a genuine replay
    CHECK(outcome(h, "injected-9") == "none");

    // --trust-unverified is for letters exo has no record of; a mismatch stays refused.
    auto trusting = exo_cli(
        {"dlq", "replay", "--config", config, "--key", "real-1", "--trust-unverified", "--json"});
    CHECK(trusting.exit_code == 1);
    CHECK(result_of(json_of(trusting), "real-1")["status"] == "skipped");
    auto dry = exo_cli({"dlq", "replay", "--config", config, "--key", "injected-9",
                        "--trust-unverified", "--dry-run", "--json"});
    CHECK(result_of(json_of(dry), "injected-9")["status"] == "would replay");
    CHECK(dry.output.find("not one exo recorded writing") != std::string::npos);  // warned

    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-2", 600}, {"acc-3", 10}});
    CHECK(replayed_copies(h, "real-2", 4) == 1);
    auto again = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    CHECK(result_of(json_of(again), "real-2")["status"] == "none");  // settled
    CHECK(topic_end(h) == 4);
}
