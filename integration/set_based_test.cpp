// The framework's SQL of a whole group at once
// (docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based), against real Redis,
// PostgreSQL and the mock Kafka cluster. Records are produced before the daemon starts, so its
// first poll hands a worker all of them in one batch; every test checks that the set-based start
// ran, and compares the final tables with outcomes worked out by hand from the rules of
// docs/design.md#postgresql-tables-and-sequences (never from exo's own code).
#include <doctest/doctest.h>

#include <map>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>

#include "dedup_rows.hpp"
#include "kafka/producer.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "redis/redis_connection.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;
using exo::testing::eventually;
using exo::testing::partition_end;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::processed;
using exo::testing::RunningDaemon;

namespace {

using Balances = std::map<std::string, std::int64_t>;
using exo::testing::Rows;

pqxx::result query(const PipelineHarness& h, const std::string& sql) {
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction tx(c);
    return tx.exec(sql);
}

std::map<std::string, std::int64_t> sequences(const PipelineHarness& h) {
    std::map<std::string, std::int64_t> out;
    for (const auto& row : query(h, "SELECT entity, last_sequence FROM exo_sequences"))
        out[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    return out;
}

// The first column of every row.
std::set<std::string> keys(const PipelineHarness& h, const std::string& sql) {
    std::set<std::string> out;
    for (const auto& row : query(h, sql)) out.insert(row[0].as<std::string>());
    return out;
}

std::set<std::string> gap_sightings(const PipelineHarness& h) {
    return keys(h, "SELECT idempotency_key FROM exo_sequence_gaps");
}

std::set<std::string> ledger_events(const PipelineHarness& h) {
    return keys(h, "SELECT event_id FROM ledger_entries");
}

// What a daemon counted, copied before it is destroyed.
struct Counts {
    std::uint64_t applied, duplicates_redis, duplicates_postgres, duplicates_in_batch,
        set_based_transactions;
};

// Runs a daemon over what the topic holds until its group consumed all of it.
Counts consume_all(const PipelineHarness& h) {
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    const auto& s = d.stats();
    return {s.applied, s.duplicates_redis, s.duplicates_postgres, s.duplicates_in_batch,
            s.set_based_transactions};
}

Rows applied(std::initializer_list<const char*> keys) {
    Rows out;
    for (auto k : keys) out[k] = "APPLIED";
    return out;
}

}  // namespace

TEST_CASE(
    "in one batch a strict gap parks only the records behind it of its entity, and the rest of "
    "the batch applies") {
    PipelineHarness h({.name = "setgap", .partitions = 1, .concurrency = 1});
    // acc-a: 1, 2, 4, 5 (3 missing); acc-b: 1, 2, 3 interleaved. Amounts are
    // powers of two, so a balance names exactly the events it holds.
    h.produce({payment("a-1", "acc-a", 1, 1), payment("b-1", "acc-b", 1, 1),
               payment("a-2", "acc-a", 2, 2), payment("a-4", "acc-a", 8, 4),
               payment("b-2", "acc-b", 2, 2), payment("a-5", "acc-a", 16, 5),
               payment("b-3", "acc-b", 4, 3)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(eventually([&] { return daemon.stats().applied >= 5; }, 60s));
    // a-4 and a-5 wait; everything else of the batch is applied once.
    CHECK(h.balances() == Balances{{"acc-a", 3}, {"acc-b", 7}});
    CHECK(ledger_events(h) == std::set<std::string>{"a-1", "a-2", "b-1", "b-2", "b-3"});
    CHECK(processed(h) == applied({"a-1", "a-2", "b-1", "b-2", "b-3"}));
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-a", 2}, {"acc-b", 3}});
    CHECK(gap_sightings(h) == std::set<std::string>{"a-4", "a-5"});
    CHECK(daemon.stats().set_based_transactions > 0);

    h.produce({payment("a-3", "acc-a", 4, 3)});
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-a", 31}, {"acc-b", 7}});
    CHECK(processed(h) == applied({"a-1", "a-2", "a-3", "a-4", "a-5", "b-1", "b-2", "b-3"}));
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-a", 5}, {"acc-b", 3}});
    // The first sightings stay until retention prunes them, as on the per-record path.
    CHECK(gap_sightings(h) == std::set<std::string>{"a-4", "a-5"});
    CHECK(daemon.stats().dead_lettered == 0);
}

TEST_CASE("in one batch, strict records older than or equal to one applied before are STALE") {
    PipelineHarness h({.name = "setstrictstale", .partitions = 1, .concurrency = 1});
    // s-1b and s-2b repeat sequences applied just before them in the same batch.
    h.produce({payment("s-1", "acc-s", 1, 1), payment("s-2", "acc-s", 2, 2),
               payment("s-1b", "acc-s", 4, 1), payment("s-2b", "acc-s", 8, 2),
               payment("s-3", "acc-s", 16, 3), payment("s-0", "acc-s", 32, 0)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-s", 19}});
    CHECK(processed(h) == Rows{{"s-1", "APPLIED"},
                               {"s-2", "APPLIED"},
                               {"s-3", "APPLIED"},
                               {"s-1b", "STALE"},
                               {"s-2b", "STALE"},
                               {"s-0", "STALE"}});
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-s", 3}});
    CHECK(gap_sightings(h).empty());
    CHECK(daemon.stats().stale == 3);
    CHECK(daemon.stats().set_based_transactions > 0);
}

TEST_CASE("in one batch, latest records older than or equal to the newest applied are STALE") {
    PipelineHarness h({.name = "setlatest",
                       .partitions = 1,
                       .mode = exo::SequenceMode::latest,
                       .concurrency = 1});
    // acc-l: 5 applies (a new entity takes any first sequence), 3 and 5 are
    // stale, 7 applies, 6 is stale, 9 applies; acc-m: 0 then 0 again.
    h.produce({payment("l-5", "acc-l", 1, 5), payment("m-0", "acc-m", 1, 0),
               payment("l-3", "acc-l", 2, 3), payment("l-5b", "acc-l", 4, 5),
               payment("l-7", "acc-l", 8, 7), payment("m-0b", "acc-m", 2, 0),
               payment("l-6", "acc-l", 16, 6), payment("l-9", "acc-l", 32, 9)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-l", 41}, {"acc-m", 1}});
    CHECK(processed(h) == Rows{{"l-5", "APPLIED"},
                               {"l-3", "STALE"},
                               {"l-5b", "STALE"},
                               {"l-7", "APPLIED"},
                               {"l-6", "STALE"},
                               {"l-9", "APPLIED"},
                               {"m-0", "APPLIED"},
                               {"m-0b", "STALE"}});
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-l", 9}, {"acc-m", 0}});
    CHECK(daemon.stats().stale == 4);
    CHECK(daemon.stats().set_based_transactions > 0);
}

// Serial (scripts/integration.sh): it flushes Redis (FLUSHALL).
TEST_CASE(
    "duplicates inside one batch and across batches are each applied once, also when only the "
    "dedup rows remember them" *
    doctest::test_suite("serial")) {
    PipelineHarness h({.name = "setdup", .partitions = 2, .concurrency = 1});
    // d-2 twice in one batch: the second ends as a duplicate of the first.
    h.produce({payment("d-1", "acc-d", 1, 1, 0), payment("d-2", "acc-d", 2, 2, 0),
               payment("d-2", "acc-d", 2, 2, 0), payment("d-3", "acc-d", 4, 3, 0),
               payment("e-1", "acc-e", 1, 1, 1)});
    auto first = consume_all(h);
    CHECK(first.applied == 4);
    CHECK(first.duplicates_redis + first.duplicates_postgres + first.duplicates_in_batch == 1);
    CHECK(first.set_based_transactions > 0);
    // Redis forgets everything: the redelivered keys reach PostgreSQL mixed with
    // new ones in one group, and only the dedup rows know them.
    exo::RedisConnection redis(exo::testing::redis_options());
    REQUIRE(redis.command({"FLUSHALL"}).type != exo::RedisReply::Type::error);
    h.produce({payment("d-3", "acc-d", 4, 3, 0), payment("d-4", "acc-d", 8, 4, 0),
               payment("d-1", "acc-d", 1, 1, 0), payment("e-1", "acc-e", 1, 1, 1),
               payment("e-2", "acc-e", 2, 2, 1)});
    auto second = consume_all(h);
    CHECK(second.applied == 2);
    CHECK(second.duplicates_postgres == 3);
    CHECK(second.set_based_transactions > 0);
    CHECK(h.balances() == Balances{{"acc-d", 15}, {"acc-e", 3}});
    CHECK(processed(h) == applied({"d-1", "d-2", "d-3", "d-4", "e-1", "e-2"}));
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-d", 4}, {"acc-e", 2}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 6);
}

TEST_CASE(
    "a poison record in the middle of a batch is dead-lettered alone and the rest apply once") {
    PipelineHarness h(
        {.name = "setpoison", .partitions = 1, .handler = "misbehaving_ledger", .concurrency = 1});
    h.produce({payment("ok-1", "acc-p", 1, 1), payment("ok-2", "acc-q", 2, 1),
               payment("poison-3", "acc-x", 4, 1), payment("ok-4", "acc-p", 8, 2),
               payment("ok-5", "acc-q", 16, 2)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == Balances{{"acc-p", 9}, {"acc-q", 18}});
    CHECK(ledger_events(h) == std::set<std::string>{"ok-1", "ok-2", "ok-4", "ok-5"});
    CHECK(processed(h) == Rows{{"ok-1", "APPLIED"},
                               {"ok-2", "APPLIED"},
                               {"poison-3", "DEAD_LETTERED/poison record refused"},
                               {"ok-4", "APPLIED"},
                               {"ok-5", "APPLIED"}});
    // The poison record's sequence never moved: its effect was rolled back.
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-p", 2}, {"acc-q", 2}});
    CHECK(partition_end(h.bootstrap(), h.topic() + ".dlq") == 1);
    CHECK(daemon.stats().dead_lettered == 1);
    CHECK(daemon.stats().set_based_transactions > 0);
}

TEST_CASE("records of a sequenced and an unsequenced binding in one batch each apply once") {
    PipelineHarness h({.name = "setmixed", .partitions = 1, .concurrency = 1});
    const std::string plain = h.topic() + "_plain";
    h.cluster().create_topic(plain, 1);
    auto binding = h.config().bindings.front();
    binding.topic = plain;
    binding.sequence.reset();
    h.mutable_config().bindings.push_back(binding);
    h.produce({payment("q-1", "acc-m", 1, 1), payment("q-3", "acc-m", 2, 3),
               payment("q-2", "acc-m", 4, 2)});
    {
        exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
        // Sequences mean nothing here: 7 then 1 both apply, and acc-m's sequence is untouched.
        for (const auto& p : {exo::Payment{"u-1", "acc-m", "CREDIT", 8, 7},
                              exo::Payment{"u-2", "acc-m", "CREDIT", 16, 1},
                              exo::Payment{"u-1", "acc-m", "CREDIT", 8, 7}})
            producer.produce({plain, 0, p.account_id, p.json(), {}});
        producer.flush(10s);
    }
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    REQUIRE(eventually([&] { return daemon.stats().finished() == 6; }, 60s));
    daemon.stop();
    // q-3 waited for q-2 (parked), then applied.
    CHECK(h.balances() == Balances{{"acc-m", 31}});
    CHECK(processed(h) == applied({"q-1", "q-2", "q-3", "u-1", "u-2"}));
    CHECK(sequences(h) == std::map<std::string, std::int64_t>{{"acc-m", 3}});
    CHECK(daemon.stats().set_based_transactions > 0);
}

// Serial (scripts/integration.sh): it reads the server's deadlock counter.
TEST_CASE(
    "two batch runners whose batches share entities neither deadlock nor apply anything twice" *
    doctest::test_suite("serial")) {
    PipelineHarness h(
        {.name = "setshared", .partitions = 8, .batch_size = 40, .gap_timeout = 120s});
    // 12 accounts x 25 strict sequences, spread so that consecutive sequences of
    // an account sit on different partitions (and so in both runners' batches).
    std::vector<exo::PaymentMessage> messages;
    Balances expected;
    for (int seq = 1; seq <= 25; ++seq)
        for (int a = 0; a < 12; ++a) {
            const auto account = "acc-" + std::to_string(a);
            messages.push_back(payment("x-" + std::to_string(a) + "-" + std::to_string(seq),
                                       account, seq, seq, (seq * 3 + a) % 8));
            expected[account] += seq;
        }
    const auto deadlocks_before = exo::testing::deadlocks_detected();
    h.produce(messages);
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(120s));
    daemon.stop();
    CHECK(h.balances() == expected);
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 300);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 300);
    CHECK(h.count("SELECT count(*) FROM exo_sequences WHERE last_sequence = 25") == 12);
    CHECK(daemon.stats().dead_lettered == 0);
    CHECK(daemon.stats().set_based_transactions > 0);
    // Statistics reach pg_stat_database at the end of a transaction, a little later.
    std::this_thread::sleep_for(1s);
    CHECK(exo::testing::deadlocks_detected() == deadlocks_before);
}

namespace {

// Under ordering: key (a lane per account), acc-e's sequence row is held locked
// by another session, as by another slot's open transaction, for as long as the
// test wants: past lock_timeout. A batch holds e-2 (acc-e) first, 20 records of
// 20 other accounts, and e-3 (acc-e) among them; with `poison`, a poison record
// too, which rolls the optimistic pass back and sends the rest careful.
void held_entity_holds_only_its_records(const char* name, bool poison) {
    PipelineHarness h({.name = name,
                       .partitions = 1,
                       .handler = poison ? "misbehaving_ledger" : "ledger",
                       .ordering = exo::Ordering::key,
                       .concurrency = 1});
    h.mutable_config().postgres.lock_timeout = 1s;
    h.produce({payment("e-1", "acc-e", 1, 1)});
    consume_all(h);

    pqxx::connection holder_connection(h.postgres_uri());
    pqxx::work holder(holder_connection);
    holder.exec("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-e' FOR UPDATE");
    std::vector<exo::PaymentMessage> messages{payment("e-2", "acc-e", 2, 2)};
    Balances expected{{"acc-e", 7}};
    for (int i = 1; i <= 20; ++i) {
        const auto account = "acc-" + std::to_string(i);
        messages.push_back(payment("o-" + std::to_string(i), account, 1, 1));
        expected[account] = 1;
        if (i == 10) messages.push_back(payment("e-3", "acc-e", 4, 3));
    }
    if (poison) messages.push_back(payment("poison-1", "acc-p", 1, 1));
    h.produce(messages);
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    exo::testing::wait_until(
        "the 20 records of other accounts applied while acc-e is held", 60s,
        [&] { return h.count("SELECT count(*) FROM ledger_entries WHERE account_id <> 'acc-e'"); },
        [](auto n) { return n == 20; });
    // Still held: acc-e's records wait, NACKed, and nothing of them is written.
    CHECK(h.balances().at("acc-e") == 1);
    CHECK(sequences(h).at("acc-e") == 1);
    CHECK(daemon.stats().conflicts > 0);
    // No batch was put back whole, as when a lock timeout failed the careful pass.
    CHECK(daemon.stats().batch_failures == 0);

    holder.abort();
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();
    CHECK(h.balances() == expected);
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 23);
    CHECK(sequences(h).at("acc-e") == 3);
    // e-3 never ran before e-2 (strict: it would have parked, its sighting recorded).
    CHECK(gap_sightings(h).empty());
    CHECK(daemon.stats().dead_lettered == (poison ? 1 : 0));
    CHECK(daemon.stats().set_based_transactions > 0);
}

}  // namespace

TEST_CASE(
    "with ordering: key, a record whose strict entity another transaction holds locked past "
    "lock_timeout is NACKed alone: the 20 other records of its batch apply while the lock is "
    "held, and it applies after it, in order with the entity's later record") {
    held_entity_holds_only_its_records("entityheld", /*poison=*/false);
}

TEST_CASE(
    "a record whose strict entity another transaction holds locked is NACKed alone also when a "
    "poison record sends its batch to the careful pass") {
    held_entity_holds_only_its_records("entityheldcareful", /*poison=*/true);
}
