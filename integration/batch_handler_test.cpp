// Batch handlers (exo/batch_handler.hpp) against real Redis, PostgreSQL and the
// mock Kafka cluster: how a failure inside handle_batch() is isolated so the
// good records of the batch commit exactly once. Records are produced before
// the daemon starts, so its first poll hands the one worker all of them in one
// batch. Expected tables are worked out by hand from the contract.
#include <doctest/doctest.h>

#include <map>
#include <pqxx/pqxx>
#include <set>
#include <string>

#include "dedup_rows.hpp"
#include "kafka/producer.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;
using exo::testing::batch_calls;
using exo::testing::batch_records;
using exo::testing::batch_reruns;
using exo::testing::batch_solo_calls;
using exo::testing::eventually;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::processed;
using exo::testing::RunningDaemon;

namespace {

using Balances = std::map<std::string, std::int64_t>;
using exo::testing::Rows;

// The batch-handler counters of test_handlers.hpp, as differences from construction.
struct BatchCalls {
    int calls0 = batch_calls, records0 = batch_records, reruns0 = batch_reruns,
        solo0 = batch_solo_calls;
    int calls() const { return batch_calls - calls0; }
    int records() const { return batch_records - records0; }
    int reruns() const { return batch_reruns - reruns0; }
    int solo() const { return batch_solo_calls - solo0; }
};

}  // namespace

TEST_CASE(
    "a record a batch handler names as poison is dead-lettered alone, and the rest of its batch "
    "applies once in one more batch call, not record by record") {
    PipelineHarness h(
        {.name = "batchpoison", .partitions = 1, .handler = "cue_batch_ledger", .concurrency = 1});
    h.produce({payment("ok-1", "acc-p", 1, 1), payment("ok-2", "acc-q", 2, 1),
               payment("poison-3", "acc-x", 4, 1), payment("ok-4", "acc-p", 8, 2),
               payment("ok-5", "acc-q", 16, 2)});
    const BatchCalls counted;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-p", 9}, {"acc-q", 18}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 4);
    CHECK(processed(h) == Rows{{"ok-1", "APPLIED"},
                               {"ok-2", "APPLIED"},
                               {"poison-3", "DEAD_LETTERED/poison record refused"},
                               {"ok-4", "APPLIED"},
                               {"ok-5", "APPLIED"}});
    // The poison record's sequence step was rolled back with it.
    CHECK(h.count("SELECT count(*) FROM exo_sequences WHERE entity = 'acc-x'") == 0);
    CHECK(partition_end(h.bootstrap(), h.topic() + ".dlq") == 1);
    CHECK(daemon.stats().dead_lettered == 1);
    CHECK(daemon.stats().records_isolated == 1);
    // One call with all five, one without the poison record: no record ran alone.
    CHECK(counted.calls() == 2);
    CHECK(counted.records() == 9);
    CHECK(counted.reruns() == 4);
    CHECK(counted.solo() == 0);
}

TEST_CASE(
    "a batch handler that fails without naming a record has each record run alone, so only the "
    "bad one is dead-lettered and the others apply once") {
    PipelineHarness h(
        {.name = "batchanon", .partitions = 1, .handler = "cue_batch_ledger", .concurrency = 1});
    h.produce({payment("ok-1", "acc-p", 1, 1), payment("anon-2", "acc-x", 2, 1),
               payment("ok-3", "acc-p", 4, 2), payment("ok-4", "acc-q", 8, 1)});
    const BatchCalls counted;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-p", 5}, {"acc-q", 8}});
    CHECK(processed(h) == Rows{{"ok-1", "APPLIED"},
                               {"anon-2", "DEAD_LETTERED/anonymous refusal"},
                               {"ok-3", "APPLIED"},
                               {"ok-4", "APPLIED"}});
    CHECK(partition_end(h.bootstrap(), h.topic() + ".dlq") == 1);
    CHECK(daemon.stats().records_isolated == 0);
    // After the failed call, each record ran alone in its savepoint.
    CHECK(counted.solo() == 4);
}

TEST_CASE(
    "a record a batch handler fails with a retryable error is retried until it applies, and the "
    "records of its partition behind it wait for it instead of parking") {
    PipelineHarness h({.name = "batchflaky",
                       .partitions = 1,
                       .handler = "cue_batch_ledger",
                       .max_attempts = 5,
                       .concurrency = 1});
    h.produce({payment("f-1", "acc-f", 1, 1), payment("g-1", "acc-g", 2, 1),
               payment("flaky-2", "acc-f", 4, 2), payment("f-3", "acc-f", 8, 3),
               payment("g-2", "acc-g", 16, 2)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-f", 13}, {"acc-g", 18}});
    CHECK(processed(h) == Rows{{"f-1", "APPLIED"},
                               {"g-1", "APPLIED"},
                               {"flaky-2", "APPLIED"},
                               {"f-3", "APPLIED"},
                               {"g-2", "APPLIED"}});
    CHECK(h.count("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-f'") == 3);
    // Held behind flaky-2, f-3 never reached the sequence check early: no gap sighting.
    CHECK(h.count("SELECT count(*) FROM exo_sequence_gaps") == 0);
    CHECK(daemon.stats().retries == 2);
    CHECK(daemon.stats().records_isolated == 2);
    CHECK(daemon.stats().dead_lettered == 0);
}

TEST_CASE("results a batch handler sets are stored with the dedup rows, one statement per batch") {
    PipelineHarness h(
        {.name = "batchresult", .partitions = 1, .handler = "cue_batch_ledger", .concurrency = 1});
    h.produce({payment("result-1", "acc-r", 1, 1), payment("plain-2", "acc-r", 2, 2),
               payment("result-3", "acc-s", 4, 1)});
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(60s));
    }
    CHECK(processed(h) == Rows{{"result-1", "APPLIED/r:result-1"},
                               {"plain-2", "APPLIED"},
                               {"result-3", "APPLIED/r:result-3"}});
    // Redelivered, they are duplicates and the handler does not run again.
    const BatchCalls counted;
    h.produce({payment("result-1", "acc-r", 1, 1), payment("result-3", "acc-s", 4, 1)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(daemon.stats().duplicates() == 2);
    CHECK(counted.calls() == 0);
    CHECK(h.balances() == Balances{{"acc-r", 3}, {"acc-s", 4}});
}

TEST_CASE("a per-record handler and a batch handler on two topics of one daemon each apply once") {
    PipelineHarness h(
        {.name = "batchmixed", .partitions = 1, .handler = "cue_batch_ledger", .concurrency = 1});
    const std::string other = h.topic() + "_records";
    h.cluster().create_topic(other, 1);
    auto binding = h.config().bindings.front();
    binding.topic = other;
    binding.handler = "misbehaving_ledger";  // per record; its own sequences (by handler)
    h.mutable_config().bindings.push_back(binding);
    // Each duplicate comes last, so it waits for a batch of its own and finds its
    // key completed (a duplicate earlier would hold the records behind it back).
    h.produce({payment("b-1", "acc-b", 1, 1), payment("b-2", "acc-b", 2, 2),
               payment("b-3", "acc-b", 4, 3), payment("b-1", "acc-b", 1, 1)});
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        for (const auto& p : {exo::Payment{"r-1", "acc-r", "CREDIT", 8, 1},
                              exo::Payment{"r-2", "acc-r", "CREDIT", 16, 2},
                              exo::Payment{"r-1", "acc-r", "CREDIT", 8, 1}})
            producer.produce({other, 0, p.account_id, p.json(), {}});
        producer.flush(10s);
    }
    const BatchCalls counted;
    const int handle_calls = exo::testing::handle_calls;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    REQUIRE(eventually([&] { return daemon.stats().finished() == 7; }, 60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-b", 7}, {"acc-r", 24}});
    CHECK(processed(h) == Rows{{"b-1", "APPLIED"},
                               {"b-2", "APPLIED"},
                               {"b-3", "APPLIED"},
                               {"r-1", "APPLIED"},
                               {"r-2", "APPLIED"}});
    CHECK(daemon.stats().applied == 5);
    // The batch topic's records went through handle_batch(), the other's through handle().
    CHECK(counted.records() >= 3);
    CHECK(counted.solo() == 0);
    CHECK(exo::testing::handle_calls - handle_calls == 2);
}

TEST_CASE(
    "a batch handler that swallows a database error gets nothing committed for it: the record "
    "that did is found alone, retried and dead-lettered, and the others apply once") {
    PipelineHarness h({.name = "batchswallow",
                       .partitions = 1,
                       .handler = "cue_batch_ledger",
                       .max_attempts = 2,
                       .concurrency = 1});
    h.produce({payment("ok-1", "acc-p", 1, 1), payment("swallow-2", "acc-x", 2, 1),
               payment("ok-3", "acc-q", 4, 1)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-p", 1}, {"acc-q", 4}});
    const auto rows = processed(h);
    CHECK(rows.at("ok-1") == "APPLIED");
    CHECK(rows.at("ok-3") == "APPLIED");
    CHECK(rows.at("swallow-2").rfind("DEAD_LETTERED/gave up after 2 attempts", 0) == 0);
    CHECK(rows.at("swallow-2").find("caught a database error and went on") != std::string::npos);
    CHECK(h.count("SELECT count(*) FROM ledger_entries WHERE event_id = 'swallow-2'") == 0);
    CHECK(partition_end(h.bootstrap(), h.topic() + ".dlq") == 1);
}

TEST_CASE(
    "a batch handler naming a record outside its batch is taken as naming none, and a payload "
    "that is not JSON is named by its own json() in the batch") {
    PipelineHarness h({.name = "batchbadindex",
                       .partitions = 1,
                       .with_sequence = false,
                       .handler = "cue_batch_ledger",
                       .concurrency = 1});
    h.mutable_config().bindings.front().key =
        exo::KeySource{};  // coordinates: any payload has a key
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        for (const auto& p : {exo::Payment{"ok-1", "acc-p", "CREDIT", 1, 1}})
            producer.produce({h.topic(), 0, p.account_id, p.json(), {}});
        producer.produce({h.topic(), 0, std::string("k"), "this is not json", {}});
        for (const auto& p : {exo::Payment{"ok-3", "acc-p", "CREDIT", 4, 2},
                              exo::Payment{"ok-4", "acc-q", "CREDIT", 8, 1}})
            producer.produce({h.topic(), 0, p.account_id, p.json(), {}});
        producer.flush(10s);
    }
    const BatchCalls counted;
    {
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(60s));
        daemon.stop();
        CHECK(h.balances() == Balances{{"acc-p", 5}, {"acc-q", 8}});
        CHECK(daemon.stats().records_isolated == 1);  // the JSON one, by its index
        CHECK(daemon.stats().dead_lettered == 1);
        CHECK(counted.solo() == 0);
    }
    auto dead = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].value == "this is not json");

    // Keys are the coordinates here, so the event ids can carry the cue.
    h.mutable_config().bindings.front().key = exo::KeySource{exo::KeySourceKind::json, "/eventId"};
    h.produce({payment("ok-5", "acc-r", 16, 1), payment("badindex-6", "acc-s", 32, 1),
               payment("ok-7", "acc-r", 64, 2)});
    const BatchCalls counted_again;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-p", 5}, {"acc-q", 8}, {"acc-r", 80}});
    CHECK(processed(h).at("badindex-6") == "DEAD_LETTERED/bad index badindex-6");
    CHECK(daemon.stats().records_isolated == 0);
    CHECK(counted_again.solo() == 3);  // each record alone, once the index meant nothing
}

TEST_CASE(
    "with pipeline.framework_sql per_record, every record runs alone through the per-record "
    "statements, batch handlers included, and still applies once") {
    PipelineHarness h(
        {.name = "batchpersql", .partitions = 1, .handler = "cue_batch_ledger", .concurrency = 1});
    h.mutable_config().pipeline.framework_sql = exo::FrameworkSql::per_record;
    h.produce({payment("p-1", "acc-p", 1, 1), payment("p-3", "acc-p", 4, 3),
               payment("p-2", "acc-p", 2, 2), payment("poison-4", "acc-q", 8, 1),
               payment("p-1", "acc-p", 1, 1)});
    const BatchCalls counted;
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-p", 7}});
    CHECK(processed(h) == Rows{{"p-1", "APPLIED"},
                               {"p-2", "APPLIED"},
                               {"p-3", "APPLIED"},
                               {"poison-4", "DEAD_LETTERED/poison record refused"}});
    CHECK(daemon.stats().set_based_transactions == 0);
    CHECK(daemon.stats().records_isolated == 0);
    CHECK(counted.calls() == counted.solo());  // never more than one record per call
    CHECK(counted.solo() >= 4);
}
