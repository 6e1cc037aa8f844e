// A dead letter always fits (issue 31, item 7): a record whose key or headers
// alone nearly fill the producer's message.max.bytes (librdkafka's default,
// 1,000,000 bytes) cannot be dead-lettered even without its value, since exo's
// headers come on top. Before the fix it was retried max_attempts times and then
// stalled its partition for good. The real daemon, `exo dlq list` and `exo dlq
// replay` against the real servers.
#include <doctest/doctest.h>

#include "core/exo_headers.hpp"
#include "kafka/producer.hpp"
#include "operations_cli.hpp"
#include "pg/migrations.hpp"

using namespace std::chrono_literals;
using exo::testing::last_header;
using exo::testing::payment_json;
using exo::testing::PipelineHarness;
using nlohmann::json;
using namespace exo::testing::ops;

namespace {

// Under the producer's default limit as a record (so anyone could produce it),
// over it as a dead letter, with or without its value.
constexpr std::size_t kNearlyAMegabyte = 999750;

}  // namespace

TEST_CASE(
    "records with a 1 MB key or 1 MB of headers that their handler refuses are dead-lettered "
    "once with the key and headers as sizes and digests, the partition goes on, and they are "
    "listed and replayed from the source topic") {
    PipelineHarness h({.name = "dlq_fit", .partitions = 1});
    const std::string config = write_config(h);
    const std::string big_key(kNearlyAMegabyte, 'k');
    const std::string big_header(kNearlyAMegabyte, 'h');
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        // Over 100: the refusing ledger throws PermanentError for both.
        producer.produce({h.topic(), 0, big_key, payment_json("big-key", "acc-1", 500), {}});
        producer.produce({h.topic(),
                          0,
                          std::string("acc-2"),
                          payment_json("big-headers", "acc-2", 600),
                          {{"blob", big_header}, {"trace-id", "t-2"}}});
        producer.produce({h.topic(), 0, std::string("acc-3"), payment_json("ok", "acc-3", 10), {}});
        producer.flush(30s);
    }
    // Before the fix: the partition stalls at offset 0 and is never consumed to its end.
    consume_refusing_large_payments(h);
    CHECK(outcome(h, "big-key") == "DEAD_LETTERED");
    CHECK(outcome(h, "big-headers") == "DEAD_LETTERED");
    CHECK(outcome(h, "ok") == "APPLIED");
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-3", 10}});

    const auto letters = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 2);
    REQUIRE(letters.size() == 2);
    CHECK(exo::testing::partition_end(h.bootstrap(), h.topic() + ".dlq") == 2);  // once each
    // The keyless letter may be on another partition of the dead-letter topic: by content.
    const bool first_is_key =
        letters[0].value.empty() && last_header(letters[0], "exo-key-omitted");
    const auto& key_letter = letters[first_is_key ? 0 : 1];
    CHECK_FALSE(key_letter.key.has_value());
    CHECK(key_letter.value.empty());
    REQUIRE(last_header(key_letter, "exo-key-omitted") != nullptr);
    CHECK(last_header(key_letter, "exo-key-omitted")->value ==
          exo::omitted_bytes_text(big_key.size(), exo::sha256_hex(big_key)));
    REQUIRE(last_header(key_letter, "exo-idempotency-key") != nullptr);
    CHECK(last_header(key_letter, "exo-idempotency-key")->value == "big-key");
    const auto& header_letter = letters[first_is_key ? 1 : 0];
    CHECK(header_letter.key == "acc-2");
    CHECK(header_letter.value.empty());
    CHECK(last_header(header_letter, "blob") == nullptr);
    REQUIRE(last_header(header_letter, "exo-header-omitted") != nullptr);
    CHECK(last_header(header_letter, "exo-header-omitted")->value ==
          "blob: " + exo::omitted_bytes_text(big_header.size(), exo::sha256_hex(big_header)));
    REQUIRE(last_header(header_letter, "trace-id") != nullptr);
    CHECK(last_header(header_letter, "trace-id")->value == "t-2");

    json listed = json_of(exo_cli({"dlq", "list", "--config", config, "--json"}));
    REQUIRE(listed.size() == 2);
    CHECK(((listed[0]["key"] == "big-key" && listed[1]["key"] == "big-headers") ||
           (listed[1]["key"] == "big-key" && listed[0]["key"] == "big-headers")));

    auto replayed = exo_cli({"dlq", "replay", "--config", config, "--all", "--json"});
    INFO("replay: " << replayed.output);
    CHECK(replayed.exit_code == 0);
    REQUIRE(topic_end(h) == 5);
    const auto topic = exo::testing::read_topic(h.bootstrap(), h.topic(), 5);
    REQUIRE(topic.size() == 5);
    // The replays are the records as produced, read back at their coordinates.
    for (std::size_t i = 3; i < 5; ++i) {
        if (topic[i].value.find("big-key") != std::string::npos) {
            CHECK(topic[i].key.value_or("").size() == big_key.size());
        } else {
            REQUIRE(last_header(topic[i], "blob") != nullptr);
            CHECK(last_header(topic[i], "blob")->value == big_header);
        }
    }
    consume_fixed(h);
    CHECK(h.balances() ==
          std::map<std::string, std::int64_t>{{"acc-1", 500}, {"acc-2", 600}, {"acc-3", 10}});
}
