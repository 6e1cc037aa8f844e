// Key reuse (issue 34 part 2): a producer sends event e5 twice with different
// accounts. The dedup row keeps the applied copy's fingerprint; a later copy of
// the key with another payload is dead-lettered (default), logged and counted,
// or ignored, by the binding's on_key_reuse. Real Redis, PostgreSQL and the mock
// Kafka cluster. Each case runs twice: Redis kept (the later copy is answered
// DUPLICATE by Redis with the applied copy's fingerprint, then decided by its dedup
// row) and Redis flushed before each later copy (PostgreSQL's duplicate answer alone).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kafka/producer.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "redis/redis_connection.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::header;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;

namespace {

const std::string kAccountA =
    R"({"eventId":"e5","accountId":"acc-A","type":"CREDIT","amount":5,"sequenceId":1})";
const std::string kAccountB =
    R"({"eventId":"e5","accountId":"acc-B","type":"CREDIT","amount":5,"sequenceId":1})";
// python3 -c 'import hashlib; print(hashlib.sha256(b"<kAccountA>").hexdigest()[:32])'
const std::string kFingerprintA = "103cd57e210e5859141b189db47ed70e";
const std::string kOther =
    R"({"eventId":"e6","accountId":"acc-B","type":"CREDIT","amount":7,"sequenceId":2})";
const std::string kFingerprintB = "42ea9f3deaab7108d010b4a76e626452";

struct Counts {
    std::uint64_t applied, duplicates, duplicates_redis, dead_lettered, key_reused, set_based,
        contradicted;
};

// Flushes Redis if `flush`, produces `values` to partition 0 and consumes them in a new run.
Counts consume(const PipelineHarness& h, const std::vector<std::string>& values, bool flush) {
    if (flush) {
        exo::RedisConnection redis(exo::testing::redis_options());
        REQUIRE(redis.command({"FLUSHALL"}).type != exo::RedisReply::Type::error);
    }
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    for (const auto& value : values) producer.produce({h.topic(), 0, std::nullopt, value, {}});
    producer.flush(30s);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    const auto& s = d.stats();
    return {s.applied,
            s.duplicates(),
            s.duplicates_redis,
            s.dead_lettered,
            s.topics().at(h.topic())->key_reused.load(),
            s.set_based_transactions.load(),
            s.redis_duplicates_contradicted.load()};
}

void configure(PipelineHarness& h, exo::KeyReusePolicy policy) {
    h.mutable_config().bindings[0].key = {exo::KeySourceKind::json, "/eventId", {}};
    h.mutable_config().bindings[0].on_key_reuse = policy;
}

}  // namespace

TEST_CASE("a key reused with a different payload is dead-lettered naming both fingerprints" *
          doctest::test_suite("serial")) {
    for (const bool flush : {false, true}) {
        CAPTURE(flush);
        PipelineHarness h({.name = flush ? "reuse_dead_letter_pg" : "reuse_dead_letter_redis",
                           .partitions = 1,
                           .with_sequence = false});
        configure(h, exo::KeyReusePolicy::dead_letter);
        const Counts first = consume(h, {kAccountA}, flush);
        CHECK(first.applied == 1);

        // A byte-identical redelivery stays a plain duplicate (per-record start: one record).
        const Counts again = consume(h, {kAccountA}, flush);
        CHECK(again.duplicates == 1);
        CHECK(again.duplicates_redis == (flush ? 0 : 1));  // Redis's fingerprint agreed
        CHECK(again.dead_lettered == 0);
        CHECK(again.key_reused == 0);

        // With another event in its batch: the set-based start (two records) reads the row.
        const Counts reused = consume(h, {kAccountB, kOther}, flush);
        CHECK(reused.applied == 1);
        CHECK(reused.set_based >= 1);
        CHECK(reused.duplicates == 0);
        CHECK(reused.dead_lettered == 1);
        CHECK(reused.key_reused == 1);
        CHECK(reused.contradicted == 0);
        auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
        REQUIRE(dlq.size() == 1);
        CHECK(header(dlq[0], "exo-error") == "key reused with a different payload: this copy " +
                                                 kFingerprintB + ", the applied one " +
                                                 kFingerprintA + " at " + h.topic() + "/0/0");
        CHECK(dlq[0].value == kAccountB);
        // The key keeps the applied copy's row: no second row, its fingerprint A's.
        CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'e5'"
                      " AND fingerprint = '" +
                      kFingerprintA + "' AND outcome = 'APPLIED'") == 1);
    }
}

TEST_CASE(
    "both copies of a reused key in one batch: the first is applied, the later one "
    "dead-lettered, never finished as the first's duplicate" *
    doctest::test_suite("serial")) {
    PipelineHarness h({.name = "reuse_in_batch", .partitions = 1, .with_sequence = false});
    configure(h, exo::KeyReusePolicy::dead_letter);
    h.mutable_config().pipeline.linger = 500ms;  // both copies wait for one batch
    const Counts c = consume(h, {kAccountA, kAccountB}, /*flush=*/false);
    CHECK(c.applied == 1);
    CHECK(c.dead_lettered == 1);
    CHECK(c.key_reused == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(dlq[0].value == kAccountB);
    CHECK(header(dlq[0], "exo-error").find(kFingerprintB) != std::string::npos);
}

TEST_CASE("on_key_reuse log finishes a reused key as a duplicate and counts it" *
          doctest::test_suite("serial")) {
    for (const bool flush : {false, true}) {
        CAPTURE(flush);
        PipelineHarness h({.name = flush ? "reuse_log_pg" : "reuse_log_redis",
                           .partitions = 1,
                           .with_sequence = false});
        configure(h, exo::KeyReusePolicy::log);
        CHECK(consume(h, {kAccountA}, flush).applied == 1);
        const Counts reused = consume(h, {kAccountB}, flush);
        CHECK(reused.duplicates == 1);
        CHECK(reused.duplicates_redis == 0);  // Redis's fingerprint differed: the row decided
        CHECK(reused.contradicted == 0);
        CHECK(reused.dead_lettered == 0);
        CHECK(reused.key_reused == 1);
    }
}

TEST_CASE("on_key_reuse ignore finishes a reused key as a plain duplicate, uncounted" *
          doctest::test_suite("serial")) {
    for (const bool flush : {false, true}) {
        CAPTURE(flush);
        PipelineHarness h({.name = flush ? "reuse_ignore_pg" : "reuse_ignore_redis",
                           .partitions = 1,
                           .with_sequence = false});
        configure(h, exo::KeyReusePolicy::ignore);
        CHECK(consume(h, {kAccountA}, flush).applied == 1);
        const Counts reused = consume(h, {kAccountB}, flush);
        CHECK(reused.duplicates == 1);
        CHECK(reused.duplicates_redis == (flush ? 0 : 1));  // ignore: Redis's answer stands
        CHECK(reused.dead_lettered == 0);
        CHECK(reused.key_reused == 0);
        // ignore compares nothing, so no fingerprint was computed or kept.
        CHECK(h.count("SELECT count(*) FROM exo_processed WHERE fingerprint IS NOT NULL") == 0);
    }
}
