// Inputs and handler habits that used to stall a partition for good or make a
// COMMIT lie (docs/design.md#failure-matrix and docs/design.md#inputs-at-the-boundaries), against
// real Redis, PostgreSQL and the mock Kafka cluster. Each test fails on the code before its fix: by
// a partition that never finishes, a lost effect, or a crash.
#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <limits>
#include <pqxx/pqxx>
#include <random>
#include <thread>

#include "kafka/kafka_logging.hpp"
#include "kafka/producer.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;
using exo::testing::eventually;
using exo::testing::header;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;

namespace {

using Balances = std::map<std::string, std::int64_t>;

// Kafka protocol API key of Produce (rdkafka_proto.h is not installed).
constexpr int kApiProduce = 0;

std::string payment_json(const std::string& event, const std::string& account, std::int64_t amount,
                         std::int64_t sequence) {
    return exo::Payment{event, account, "CREDIT", amount, sequence}.json();
}

// Produces records with any bytes in any header, which h.produce() cannot.
void produce_raw(const PipelineHarness& h, const std::vector<exo::OutgoingRecord>& records) {
    exo::KafkaProducer producer(
        exo::ProducerOptions{h.bootstrap(), {{"message.max.bytes", "4000000"}}});
    for (const auto& r : records) producer.produce(r);
    producer.flush(30s);
}

exo::OutgoingRecord raw(const PipelineHarness& h, std::string value,
                        std::vector<exo::RecordHeader> headers = {}, int partition = 0) {
    return {h.topic(), partition, std::nullopt, std::move(value), std::move(headers)};
}

// What a daemon counted, copied before it is destroyed.
struct Counts {
    std::uint64_t applied, duplicates, stale, dead_lettered, retries;
};

// Runs a daemon over what the topic holds until its group consumed all of it.
Counts consume_all(const PipelineHarness& h) {
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    const auto& s = d.stats();
    return {s.applied, s.duplicates(), s.stale, s.dead_lettered, s.retries};
}

std::int64_t dead_letters(const PipelineHarness& h) {
    return partition_end(h.bootstrap(), h.topic() + ".dlq");
}

}  // namespace

TEST_CASE(
    "an idempotency key too long for PostgreSQL's index is dead-lettered once and the "
    "partition moves on") {
    PipelineHarness h({.name = "longkey", .partitions = 1});
    const std::string long_key(3200, 'e');
    h.produce({payment("ok-1", "acc-1", 1, 1), payment(long_key, "acc-2", 2, 1),
               payment("ok-3", "acc-3", 3, 1)});
    const Counts d = consume_all(h);
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-3", 3}});
    CHECK(d.dead_lettered == 1);
    CHECK(dead_letters(h) == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-error").find("over the limit of 1024") != std::string::npos);
}

TEST_CASE(
    "header keys PostgreSQL would refuse (overlong, surrogate, F5-FF) are stored hex-encoded "
    "and apply exactly once") {
    PipelineHarness h({.name = "badutf8", .partitions = 1, .with_sequence = false});
    h.mutable_config().bindings[0].key = {exo::KeySourceKind::header, "id"};
    const std::string overlong =
                          "\xC0\x80"
                          "abc",
                      surrogate = "\xED\xA0\x80", high = "\xF5\xFF";
    produce_raw(h, {raw(h, payment_json("e1", "acc-1", 1, 1), {{"id", overlong}}),
                    raw(h, payment_json("e2", "acc-2", 2, 1), {{"id", surrogate}}),
                    raw(h, payment_json("e3", "acc-3", 3, 1), {{"id", high}}),
                    raw(h, payment_json("e1", "acc-1", 1, 1), {{"id", overlong}})});
    const Counts d = consume_all(h);
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-2", 2}, {"acc-3", 3}});
    CHECK(d.applied == 3);
    CHECK(d.duplicates == 1);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key IN "
                  "('binary:c080616263', 'binary:eda080', 'binary:f5ff')") == 3);
    CHECK(dead_letters(h) == 0);
}

TEST_CASE("an error text that is not valid UTF-8 is dead-lettered once with a durable row") {
    PipelineHarness h({.name = "badtext", .partitions = 1, .handler = "misbehaving_ledger"});
    h.produce({payment("badtext-1", "acc-1", 1, 1), payment("ok-2", "acc-2", 2, 1)});
    consume_all(h);
    CHECK(h.balances() == Balances{{"acc-2", 2}});
    CHECK(dead_letters(h) == 1);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'badtext-1'"
                  " AND outcome = 'DEAD_LETTERED' AND result LIKE 'refused: %end'") == 1);
}

TEST_CASE(
    "a handler that swallows a database error fails alone at the next savepoint and the rest "
    "of its batch applies once") {
    PipelineHarness h({.name = "swallow_mid",
                       .partitions = 1,
                       .handler = "misbehaving_ledger",
                       .max_attempts = 2});
    h.produce({payment("ok-1", "acc-1", 1, 1), payment("swallow-2", "acc-2", 2, 1),
               payment("ok-3", "acc-3", 3, 1)});
    const Counts d = consume_all(h);
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-3", 3}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 2);
    CHECK(d.applied == 2);
    CHECK(dead_letters(h) == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-error").find("caught a database error") != std::string::npos);
    CHECK(header(dlq[0], "exo-idempotency-key") == "swallow-2");
}

TEST_CASE(
    "a swallowed database error in a batch's last record does not make COMMIT report the "
    "batch applied") {
    PipelineHarness h({.name = "swallow_last",
                       .partitions = 1,
                       .handler = "misbehaving_ledger",
                       .max_attempts = 2});
    h.produce({payment("ok-1", "acc-1", 1, 1), payment("swallow-2", "acc-2", 2, 1)});
    consume_all(h);
    // Before: COMMIT silently rolled back, both claims were completed and both
    // offsets committed, and ok-1 was lost.
    CHECK(h.balances() == Balances{{"acc-1", 1}});
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 1);
    CHECK(dead_letters(h) == 1);
}

TEST_CASE(
    "a COMMIT that fails on a deferred constraint is pinned on its record and the others of "
    "the batch apply once") {
    PipelineHarness h(
        {.name = "deferred", .partitions = 1, .handler = "misbehaving_ledger", .max_attempts = 2});
    exo::testing::create_deferred_tables(h.postgres_uri());
    h.produce({payment("ok-1", "acc-1", 1, 1), payment("deferred-2", "acc-2", 2, 1),
               payment("ok-3", "acc-3", 3, 1)});
    const Counts d = consume_all(h);
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-3", 3}});
    CHECK(d.applied == 2);
    CHECK(dead_letters(h) == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-idempotency-key") == "deferred-2");
    CHECK(header(dlq[0], "exo-error").find("gave up after 2 attempts: COMMIT failed") !=
          std::string::npos);
}

TEST_CASE("every extra run of handle() after another record of the batch failed says rerun()") {
    PipelineHarness h({.name = "rerun", .partitions = 1, .handler = "misbehaving_ledger"});
    const int calls_before = exo::testing::handle_calls, reruns_before = exo::testing::rerun_calls;
    h.produce({payment("ok-1", "acc-1", 1, 1), payment("ok-2", "acc-2", 2, 1),
               payment("poison-3", "acc-3", 3, 1)});
    consume_all(h);
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-2", 2}});
    const int calls = exo::testing::handle_calls - calls_before;
    const int reruns = exo::testing::rerun_calls - reruns_before;
    CHECK(reruns >= 1);          // at least the poison record ran twice
    CHECK(calls == 3 + reruns);  // one first run each; every other run was flagged
}

TEST_CASE(
    "a dead letter too large for Kafka once exo adds its headers is sent once without its "
    "value") {
    PipelineHarness h({.name = "bigdlq", .partitions = 1, .handler = "misbehaving_ledger"});
    // The DLQ producer's message.max.bytes is librdkafka's default, 1,000,000.
    auto big = payment_json("poison-big", "acc-1", 1, 1);
    big.insert(big.size() - 1, ",\"pad\":\"" + std::string(999'900 - big.size(), 'p') + "\"");
    produce_raw(h, {raw(h, big), raw(h, payment_json("ok-2", "acc-2", 2, 1))});
    consume_all(h);
    CHECK(h.balances() == Balances{{"acc-2", 2}});
    CHECK(dead_letters(h) == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(dlq[0].value.empty());
    CHECK(header(dlq[0], "exo-value-omitted") == std::to_string(big.size()));
    CHECK(header(dlq[0], "exo-original-offset") == "0");
}

TEST_CASE(
    "a dead letter Kafka keeps refusing stalls only its partition, loudly and without "
    "flooding, and resumes once Kafka accepts it") {
    PipelineHarness h({.name = "stall",
                       .partitions = 2,
                       .handler = "misbehaving_ledger",
                       .max_attempts = 3,
                       .concurrency = 1});
    h.produce({payment("poison-1", "acc-1", 1, 1, 0), payment("ok-2", "acc-2", 2, 1, 1)});
    // Every produce request is refused from now on: the daemon's dead letters.
    h.cluster().push_request_errors(kApiProduce, 100'000,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(eventually([&] { return d.stats().dead_letter_failures >= 3; }, 60s));
    CHECK(eventually([&] { return !d.ready(); }, 5s));
    CHECK(d.stats().dead_lettered == 0);
    // Not the handler again: its verdict stands, only the dead letter is retried.
    CHECK(d.stats().retries == 0);
    // The other partition flows while this one waits.
    CHECK(eventually([&] { return h.balances() == Balances{{"acc-2", 2}}; }, 30s));
    // Proves readiness does not come back while Kafka refuses, so a bounded wait: a
    // second is two of the longest retry backoffs (500 ms) of the dead letter.
    std::this_thread::sleep_for(1s);
    CHECK_FALSE(d.ready());
    h.cluster().clear_request_errors(kApiProduce);
    REQUIRE(h.wait_until_consumed(60s));
    CHECK(eventually([&] { return d.ready(); }, 10s));
    d.stop();
    CHECK(d.stats().dead_lettered == 1);
    CHECK(dead_letters(h) == 1);
}

TEST_CASE(
    "a record whose dedup row is locked by a frozen transaction is NACKed, not waited for, and "
    "its worker's other partitions go on") {
    PipelineHarness h(
        {.name = "locked", .partitions = 2, .with_sequence = false, .concurrency = 1});
    h.mutable_config().postgres.lock_timeout = 300ms;
    // A session that took the row's lock and then stopped, as a frozen exo would.
    pqxx::connection frozen(h.postgres_uri());
    pqxx::nontransaction holder(frozen);
    holder.exec("BEGIN");
    holder.exec_params(
        "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
        " kafka_partition, kafka_offset, outcome) VALUES ($1, 'locked-1', 1, 't', 0, 0,"
        " 'APPLIED')",
        h.config().kafka.group_id);
    h.produce({payment("locked-1", "acc-1", 1, 1, 0), payment("ok-2", "acc-2", 2, 1, 1)});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    CHECK(eventually([&] { return h.balances() == Balances{{"acc-2", 2}}; }, 30s));
    CHECK(eventually([&] { return d.stats().conflicts >= 2; }, 10s));
    holder.exec("ROLLBACK");  // the frozen session is ended: the record applies
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-2", 2}});
    CHECK(d.stats().dead_lettered == 0);
}

TEST_CASE(
    "a strict-sequence gap is timed from its first sighting across restarts, so a record that "
    "keeps moving between members still times out") {
    // A rejoin of the group waits session.timeout.ms less 1 s: 3 s instead of 6.
    PipelineHarness h(
        {.name = "gap_restart", .partitions = 1, .gap_timeout = 5000ms, .session_timeout = 3000ms});
    h.produce({payment("g-2", "acc-1", 5, 2)});
    {
        RunningDaemon first(h.config(), h.registry(), h.bootstrap());
        REQUIRE(eventually([&] { return h.count("SELECT count(*) FROM exo_sequence_gaps") == 1; },
                           30s));
        std::this_thread::sleep_for(2500ms);  // part of the timeout passes on this member
        first.stop();
        CHECK(first.stats().dead_lettered == 0);
    }
    RunningDaemon second(h.config(), h.registry(), h.bootstrap());
    REQUIRE(eventually([&] { return second.ready(); }, 30s));
    auto assigned = std::chrono::steady_clock::now();
    REQUIRE(h.wait_until_consumed(60s));
    // Timed afresh, the gap would need the whole 5 s timeout once the second member has
    // the partition; timed from the first sighting, 2.5 s of it passed on the first
    // member and about 2 s more in the rebalance.
    CHECK(std::chrono::steady_clock::now() - assigned < 5s);
    second.stop();
    CHECK(second.stats().dead_lettered == 1);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_gaps") == 0);  // cleared with the letter
}

TEST_CASE("a strict sequence already at INT64_MAX answers STALE instead of overflowing") {
    PipelineHarness h({.name = "int64max", .partitions = 1});
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction tx(c);
        tx.exec_params(
            "INSERT INTO exo_sequences (handler, entity, last_sequence) VALUES"
            " ('ledger', 'acc-1', $1)",
            kMax);
    }
    h.produce({payment("max-1", "acc-1", 5, kMax), payment("ok-2", "acc-2", 2, 1)});
    const Counts d = consume_all(h);
    CHECK(d.stale == 1);
    CHECK(d.dead_lettered == 0);
    CHECK(h.balances() == Balances{{"acc-2", 2}});
}

TEST_CASE(
    "a handler whose prepare() fails makes exo not ready and dead-letters nothing, and it "
    "resumes once prepare() succeeds") {
    PipelineHarness h({.name = "prepare", .partitions = 1, .handler = "unprepared_ledger"});
    h.produce({payment("ok-1", "acc-1", 1, 1), payment("ok-2", "acc-2", 2, 1)});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(eventually([&] { return d.stats().batch_failures >= 2; }, 60s));
    CHECK_FALSE(d.ready());
    CHECK(d.stats().dead_lettered == 0);
    CHECK(d.stats().finished() == 0);
    {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction(c).exec("CREATE TABLE prepare_gate (x int)");
    }
    REQUIRE(h.wait_until_consumed(60s));
    CHECK(eventually([&] { return d.ready(); }, 10s));
    d.stop();
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-2", 2}});
    CHECK(d.stats().dead_lettered == 0);
}

TEST_CASE(
    "the dead-letter producer gets the consumer's security settings but not its consumer-only "
    "properties, so librdkafka has nothing to warn about") {
    // The harness sets session.timeout.ms and heartbeat.interval.ms, consumer-only
    // properties a producer would warn about ("... is a consumer property and will be
    // ignored by this producer instance") at every start of every worker.
    PipelineHarness h(
        {.name = "dlq_props", .partitions = 1, .handler = "misbehaving_ledger", .max_attempts = 1});
    REQUIRE(h.config().kafka.properties.count("session.timeout.ms") == 1);
    // librdkafka's lines reach the "kafka" logger (kafka/kafka_logging.hpp).
    auto kafka_log = exo::kafka_logger();
    auto seen = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
    kafka_log->sinks().push_back(seen);
    h.produce({payment("poison-1", "acc-1", 1, 1), payment("ok-1", "acc-2", 2, 1)});
    consume_all(h);
    kafka_log->sinks().pop_back();
    CHECK(dead_letters(h) == 1);
    for (const auto& line : seen->last_formatted())
        CHECK_MESSAGE(line.find("consumer property") == std::string::npos, line);
}

TEST_CASE(
    "a handler whose prepare() throws something other than a std::exception waits like any "
    "prepare failure: the worker lives, nothing is dead-lettered, and it resumes") {
    PipelineHarness h(
        {.name = "prepare_int", .partitions = 1, .handler = "foreign_prepare_ledger"});
    h.produce({payment("pi-1", "acc-1", 1, 1), payment("pi-2", "acc-2", 2, 1)});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(eventually([&] { return d.stats().batch_failures >= 2; }, 60s));
    CHECK_FALSE(d.ready());
    CHECK(d.stats().finished() == 0);
    {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction(c).exec("CREATE TABLE prepare_gate (x int)");
    }
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-2", 2}});
    CHECK(d.stats().dead_lettered == 0);
}

TEST_CASE(
    "a handler that throws something other than a std::exception is retried, then "
    "dead-lettered, and the daemon lives on") {
    PipelineHarness h(
        {.name = "throwint", .partitions = 1, .handler = "misbehaving_ledger", .max_attempts = 2});
    h.produce({payment("throwint-1", "acc-1", 1, 1), payment("ok-2", "acc-2", 2, 1)});
    consume_all(h);
    CHECK(h.balances() == Balances{{"acc-2", 2}});
    CHECK(dead_letters(h) == 1);
}

TEST_CASE(
    "a poison stream flows to its end: every good record applied once, every poison record "
    "dead-lettered once, no partition stalled") {
    PipelineHarness h({.name = "poison_stream",
                       .partitions = 4,
                       .handler = "misbehaving_ledger",
                       .max_attempts = 2});
    exo::testing::create_deferred_tables(h.postgres_uri());
    auto workload = exo::generate_payments({.count = 600, .accounts = 30, .partitions = 4});
    std::mt19937_64 rng(7);
    auto any = [&](auto& options) { return options[rng() % std::size(options)]; };
    const char* cues[] = {"poison-",  "swallow-",   "badtext-", "throwint-",
                          "divzero-", "badresult-", "deferred-"};
    const std::string broken_json[] = {"",
                                       "{",
                                       "not json",
                                       "{\"eventId\": \"\\ud800\"}",
                                       std::string("\xC0\x80", 2),
                                       std::string(3, '\0'),
                                       "[1,2,3]",
                                       "{\"eventId\": {\"nested\": 1}}"};

    std::vector<exo::OutgoingRecord> stream;
    int poison = 0;
    for (std::size_t i = 0; i < workload.messages.size(); ++i) {
        const auto& m = workload.messages[i];
        stream.push_back({h.topic(), m.partition, m.payment.account_id, m.payment.json(), {}});
        if (i % 12 != 5) continue;
        // A few percent adversarial records, each on an account of its own so a
        // strict sequence never waits for one of them.
        const std::string account = "poison-acc-" + std::to_string(poison);
        const int partition = static_cast<int>(rng() % 4);
        std::string value;
        switch (poison % 4) {
            case 0:  // a handler that throws, swallows, or breaks a limit
                value =
                    payment_json(std::string(any(cues)) + std::to_string(poison), account, 1, 1);
                break;
            case 1:  // not JSON, or JSON without a usable key
                value = any(broken_json);
                break;
            case 2:  // a key no dedup row can hold
                value = payment_json(std::string(2000 + rng() % 3000, 'k'), account, 1, 1);
                break;
            case 3:  // a sequence that is not a non-negative integer
                value = R"({"eventId":"seq-)" + std::to_string(poison) + R"(","accountId":")" +
                        account + R"(","type":"CREDIT","amount":1,"sequenceId":-)" +
                        std::to_string(1 + rng() % 9) + "}";
                break;
        }
        stream.push_back(
            {h.topic(), partition, account, value, {{"bin", std::string("\xFF\0\xC0", 3)}}});
        ++poison;
    }
    produce_raw(h, stream);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(120s));
    CHECK(d.ready());
    d.stop();
    h.check_exactly_once(workload);
    CHECK(d.stats().dead_lettered == static_cast<std::uint64_t>(poison));
    CHECK(dead_letters(h) == poison);
}

TEST_CASE(
    "a record with more headers than pipeline.max_headers_per_record is dead-lettered naming the "
    "count and its key, without its handler, while the records around it are applied") {
    PipelineHarness h({.name = "manyheaders", .partitions = 1});
    h.mutable_config().pipeline.max_headers_per_record = 10;
    auto with_headers = [&](const std::string& event, const std::string& account,
                            std::int64_t amount, std::size_t n) {
        std::vector<exo::RecordHeader> headers;
        for (std::size_t i = 0; i < n; ++i) headers.push_back({"x-" + std::to_string(i), "v"});
        return exo::OutgoingRecord{h.topic(), 0, account, payment_json(event, account, amount, 1),
                                   std::move(headers)};
    };
    // Around it: one record with a few headers, one with exactly the bound.
    produce_raw(h, {with_headers("ok-1", "acc-1", 1, 3), with_headers("many-2", "acc-2", 2, 11),
                    with_headers("ok-3", "acc-3", 3, 10)});
    const Counts d = consume_all(h);
    CHECK(h.balances() == Balances{{"acc-1", 1}, {"acc-3", 3}});
    CHECK(d.applied == 2);
    CHECK(d.dead_lettered == 1);
    REQUIRE(dead_letters(h) == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    const auto why = header(dlq[0], "exo-error");
    CHECK(why.find("11 headers") != std::string::npos);
    CHECK(why.find("pipeline.max_headers_per_record (10)") != std::string::npos);
    CHECK(why.find("Kafka key 'acc-2'") != std::string::npos);
    CHECK(header(dlq[0], "exo-headers-omitted") == "11");
    CHECK(dlq[0].header("x-0") == nullptr);               // none of its headers is copied
    CHECK(header(dlq[0], "exo-original-offset") == "1");  // consume_all: all 3 committed
}
