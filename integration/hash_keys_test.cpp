// Payload-derived keys (`key: { hash: ... }`, core/canonical_json.hpp) end to end,
// against real Redis, PostgreSQL and the mock Kafka cluster: redeliveries that
// differ only in what the binding leaves out apply once, across two runs of the
// daemon (the dedup row) and within one batch; the stored key is the digest an
// independent tool computes; bad input is dead-lettered with the usual reasons.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "kafka/producer.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::header;
using exo::testing::partition_end;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;

namespace {

using Balances = std::map<std::string, std::int64_t>;

// One payment as its producer first sent it...
const std::string kFirst =
    R"({"eventId":"h-1","accountId":"acc-1","type":"CREDIT","amount":5,"sequenceId":1,)"
    R"("sentAt":"2026-11-28T10:00:00Z","traceId":"t-1"})";
// ...and twice again: members reordered, other whitespace, new sentAt and traceId.
const std::string kAgain =
    R"({ "traceId": "t-2", "sequenceId": 1, "amount": 5, "type": "CREDIT",)"
    "\n"
    R"(  "accountId": "acc-1", "sentAt": "2026-11-28T10:07:00Z", "eventId": "h-1" })";
const std::string kAgainLater =
    R"({"sentAt":"2026-11-28T11:00:00Z","eventId":"h-1","accountId":"acc-1","traceId":"t-3",)"
    R"("amount":5,"type":"CREDIT","sequenceId":1})";
const std::string kOther =
    R"({"eventId":"h-2","accountId":"acc-2","type":"CREDIT","amount":7,"sequenceId":1,)"
    R"("sentAt":"2026-11-28T10:01:00Z","traceId":"t-4"})";

void produce_values(const PipelineHarness& h, const std::vector<std::string>& values) {
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    for (const auto& v : values) producer.produce({h.topic(), 0, std::nullopt, v, {}});
    producer.flush(30s);
}

struct Counts {
    std::uint64_t applied, duplicates, dead_lettered;
};

Counts consume_all(const PipelineHarness& h) {
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    const auto& s = d.stats();
    return {s.applied, s.duplicates(), s.dead_lettered};
}

}  // namespace

TEST_CASE(
    "copies of an event differing only in excluded fields and member order are applied exactly "
    "once") {
    PipelineHarness h({.name = "hash_exclude", .partitions = 1, .with_sequence = false});
    h.mutable_config().bindings[0].key = {
        exo::KeySourceKind::hash, {}, {{}, {"/sentAt", "/traceId"}}};

    produce_values(h, {kFirst, kOther, "not json"});
    const Counts first = consume_all(h);
    CHECK(first.applied == 2);
    CHECK(first.dead_lettered == 1);

    // A later run: both copies meet the first copy's dedup row.
    produce_values(h, {kAgain, kAgainLater});
    const Counts again = consume_all(h);
    CHECK(again.applied == 0);
    CHECK(again.duplicates == 2);

    CHECK(h.balances() == Balances{{"acc-1", 5}, {"acc-2", 7}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 2);
    // python3 -c 'import json,hashlib; d={"eventId":"h-1","accountId":"acc-1","type":"CREDIT",
    //   "amount":5,"sequenceId":1}; print(hashlib.sha256(json.dumps(d, sort_keys=True,
    //   separators=(",", ":"), ensure_ascii=False).encode()).hexdigest())'
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = "
                  "'630e3c9d7ec1e6860689f27027f6b9df27fdf2cda7e21bb80f73861b61ad96d8'") == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-error").find("payload is not valid JSON (8 bytes)") !=
          std::string::npos);
}

TEST_CASE("a hash of listed fields keys by the topic and dead-letters a payload lacking one") {
    PipelineHarness h({.name = "hash_fields", .partitions = 1, .with_sequence = false});
    h.mutable_config().bindings[0].key = {
        exo::KeySourceKind::hash, {}, {{"/eventId", "/accountId", "/amount"}, {}, true}};

    const std::string no_amount =
        R"({"eventId":"h-3","accountId":"acc-3","type":"CREDIT","sequenceId":1})";
    produce_values(h, {kFirst, no_amount, kAgain, kOther, kAgainLater});
    const Counts d = consume_all(h);
    CHECK(d.applied == 2);
    CHECK(d.duplicates == 2);
    CHECK(d.dead_lettered == 1);

    CHECK(h.balances() == Balances{{"acc-1", 5}, {"acc-2", 7}});
    // python3 -c 'import json,hashlib; d={"/eventId":"h-1","/accountId":"acc-1","/amount":5};
    //   print(hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":"),
    //   ensure_ascii=False).encode()).hexdigest())'
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = '" + h.topic() +
                  "/bcf599ccdad1897925bc9d00287ccd20ffe2d87255caddcd8bc636883a5bbad0'") == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-error").find("idempotency key: payload has no /amount") !=
          std::string::npos);
}
