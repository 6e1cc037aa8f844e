// Whose headers a dead letter's metadata is (issue 31, item 5): whoever produces
// to an input topic, or straight to a dead-letter topic, writes any header,
// exo-* too. `exo dlq list` and `exo dlq replay` must read exo's own, ignore a
// letter naming no group, print valid JSON whatever the bytes, and `--all` must
// go past a letter it refuses. The real `exo` binary against the real servers.
#include <doctest/doctest.h>

#include "kafka/producer.hpp"
#include "operations_cli.hpp"

using namespace std::chrono_literals;
using exo::testing::last_header;
using exo::testing::payment;
using exo::testing::payment_json;
using exo::testing::PipelineHarness;
using nlohmann::json;
using namespace exo::testing::ops;

namespace {

int count(const exo::Record& r, const std::string& name) {
    int n = 0;
    for (const auto& h : r.headers) n += h.name == name ? 1 : 0;
    return n;
}

std::string status_of(const json& results, const std::string& key) {
    for (const auto& r : results)
        if (r["key"] == key) return r["status"];
    return "none";
}

}  // namespace

TEST_CASE(
    "records produced with forged exo-* headers are dead-lettered, listed and replayed under "
    "their own keys, group and coordinates, and their replays carry the headers back") {
    PipelineHarness h({.name = "ops_forged", .partitions = 1});
    const std::string config = write_config(h);  // the fixed binding: key /eventId
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        producer.produce({h.topic(),
                          0,
                          std::string("acc-1"),
                          payment_json("k-1", "acc-1", 10),
                          {{"exo-consumer-group", "someone-else"},
                           {"exo-error", "forged reason"},
                           {"exo-original-offset", "5"}}});
        producer.produce(
            {h.topic(),
             0,
             std::string("acc-2"),
             payment_json("k-2", "acc-2", 20),
             {{"exo-idempotency-key", "forged-key"}, {"exo-original-topic", "elsewhere"}}});
        producer.flush(30s);
    }
    {
        // A wrong key pointer: both are dead-lettered without a key of exo's.
        exo::Config wrong = h.config();
        wrong.bindings[0].key = {exo::KeySourceKind::json, "/eventID"};
        exo::testing::RunningDaemon d(wrong, h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(60s));
        d.stop();
    }
    REQUIRE(h.balances().empty());
    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(listed.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(listed[i]["state"] == "NO_KEY");
        CHECK(listed[i]["key"].is_null());
        CHECK(listed[i]["topic"] == h.topic());
        CHECK(listed[i]["partition"] == 0);
        CHECK(listed[i]["offset"] == i);
        CHECK(listed[i]["reason"].get<std::string>().find("forged") == std::string::npos);
    }

    const auto letters = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 2);
    REQUIRE(letters.size() == 2);
    for (const auto& l : letters) {
        CHECK(count(l, "exo-consumer-group") == 1);
        CHECK(last_header(l, "exo-consumer-group")->value == h.config().kafka.group_id);
        CHECK(count(l, "exo-idempotency-key") == 0);
        CHECK(count(l, "exo-error") == 1);
        CHECK(count(l, "exo-original-topic") == 1);
        CHECK(count(l, "exo-original-offset") == 1);
    }
    REQUIRE(last_header(letters[0], "exo-received-exo-consumer-group") != nullptr);
    CHECK(last_header(letters[0], "exo-received-exo-consumer-group")->value == "someone-else");

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    CHECK(replayed.exit_code == 0);
    json results = json_of(replayed);
    CHECK(status_of(results, "k-1") == "replayed");
    CHECK(status_of(results, "k-2") == "replayed");
    REQUIRE(topic_end(h) == 4);
    // The replays are the records as produced: their own headers under their own names.
    const auto topic = exo::testing::read_topic(h.bootstrap(), h.topic(), 4);
    REQUIRE(topic.size() == 4);
    for (std::size_t i = 2; i < 4; ++i) {
        const auto& r = topic[i];
        REQUIRE(last_header(r, exo::kReplayedFromHeader) != nullptr);
        if (r.value.find("k-1") != std::string::npos) {
            CHECK(last_header(r, exo::kReplayedFromHeader)->value == h.topic() + "/0/0");
            CHECK(count(r, "exo-consumer-group") == 1);
            CHECK(last_header(r, "exo-consumer-group")->value == "someone-else");
            CHECK(count(r, "exo-received-exo-consumer-group") == 0);
        } else {
            CHECK(last_header(r, exo::kReplayedFromHeader)->value == h.topic() + "/0/1");
            CHECK(count(r, "exo-idempotency-key") == 1);
            CHECK(last_header(r, "exo-idempotency-key")->value == "forged-key");
        }
    }
    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 10}, {"acc-2", 20}});
    CHECK(json_of(exo_cli({"dlq", "list", "--config", config, "--json"})).empty());
}

TEST_CASE(
    "letters produced straight to the dead-letter topic neither break dlq list --json with bytes "
    "that are not UTF-8 nor stop dlq replay --all: it replays the others and fails at the end") {
    PipelineHarness h({.name = "ops_dlq_forged", .partitions = 1});
    const std::string config = write_config(h);
    const std::string group = h.config().kafka.group_id;
    // A letter's headers as exo wrote them before it named the group.
    auto old_style = [&](const std::string& key, int offset) {
        return std::vector<exo::RecordHeader>{{"exo-error", "bad \xff\xfe bytes"},
                                              {"exo-original-topic", h.topic()},
                                              {"exo-original-partition", "0"},
                                              {"exo-original-offset", std::to_string(offset)},
                                              {"exo-idempotency-key", key}};
    };
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        // The group's, but its value derives another key than its letter says.
        auto headers = old_style("forged-7", 7);
        headers.push_back({"exo-consumer-group", group});
        producer.produce({h.topic() + ".dlq", 0, std::string("acc-7"),
                          payment_json("other-7", "acc-7", 70), headers});
        // No group's: written before exo named it, or not by exo.
        producer.produce({h.topic() + ".dlq", 0, std::string("acc-8"),
                          payment_json("nogroup-8", "acc-8", 80), old_style("nogroup-8", 8)});
        producer.flush(30s);
    }
    h.produce({payment("big-1", "acc-1", 500, 1), payment("big-2", "acc-2", 600, 1)});
    consume_refusing_large_payments(h);
    REQUIRE(outcome(h, "big-1") == "DEAD_LETTERED");
    REQUIRE(outcome(h, "big-2") == "DEAD_LETTERED");

    auto list = exo_cli({"dlq", "list", "--config", config, "--json"});
    CHECK(list.exit_code == 0);
    json listed = json_of(list);
    REQUIRE(listed.size() == 3);            // not nogroup-8
    CHECK(listed[0]["key"] == "forged-7");  // the oldest
    CHECK(listed[0]["state"] == "NO_DEDUP_ROW");
    CHECK(listed[0]["reason"] == "bad \xef\xbf\xbd\xef\xbf\xbd bytes");  // U+FFFD each
    CHECK(listed[1]["key"] == "big-1");
    CHECK(listed[2]["key"] == "big-2");
    CHECK(list.output.find("1 record(s) of the dead-letter topics name no consumer group") !=
          std::string::npos);

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    CHECK(replayed.exit_code == 1);  // one letter refused
    json results = json_of(replayed);
    CHECK(status_of(results, "forged-7") == "skipped");
    CHECK(status_of(results, "big-1") == "replayed");
    CHECK(status_of(results, "big-2") == "replayed");
    CHECK(status_of(results, "nogroup-8") == "none");
    // Refused before its key is derived: exo has no record of writing it (item 6).
    CHECK(replayed.output.find("not one exo recorded writing") != std::string::npos);
    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 500}, {"acc-2", 600}});
}
