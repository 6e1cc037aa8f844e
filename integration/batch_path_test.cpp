// The batch path under real conditions (issue 17, items 6 to 8), against real
// Redis, PostgreSQL and the mock Kafka cluster: the order handlers see records
// in, a claim key that errors alone, and the lock order of the careful pass.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "dedup_rows.hpp"
#include "kafka/producer.hpp"
#include "pg/record_start.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "redis/claim_store.hpp"
#include "redis/redis_connection.hpp"
#include "runtime/sessions/redis_session.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;
using exo::testing::eventually;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::processed;
using exo::testing::RunningDaemon;

namespace {

using Balances = std::map<std::string, std::int64_t>;

pqxx::result query(const PipelineHarness& h, const std::string& sql) {
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction tx(c);
    return tx.exec(sql);
}

// Connections the Redis server accepted since it started (INFO stats).
long long redis_connections_received(exo::RedisConnection& redis) {
    const auto info = redis.command({"INFO", "stats"}).str;
    const std::string field = "total_connections_received:";
    const auto at = info.find(field);
    REQUIRE(at != std::string::npos);
    return std::stoll(info.substr(at + field.size()));
}

// Produces each payment to its topic's partition 0, in one flush, so that they
// arrive in one poll.
void produce_to(const PipelineHarness& h,
                const std::vector<std::pair<std::string, exo::Payment>>& payments) {
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    for (const auto& [topic, p] : payments)
        producer.produce({topic, 0, p.account_id, p.json(), {}});
    producer.flush(10s);
}

}  // namespace

TEST_CASE(
    "a batch handler bound to two topics whose names sort opposite to arrival sees an entity's "
    "records in the order their sequences were decided, and emits them in that order") {
    PipelineHarness h(
        {.name = "batchorder", .partitions = 1, .handler = "cue_batch_ledger", .concurrency = 1});
    // The second topic sorts after the first, and its record arrives first.
    const std::string first = h.topic() + "_z";
    h.cluster().create_topic(first, 1);
    auto binding = h.config().bindings.front();
    binding.topic = first;  // the same handler: the entity's sequences are shared
    h.mutable_config().bindings.push_back(binding);
    // Long enough for both records to make one batch once they are produced,
    // though fetched apart on a loaded machine (500 ms was not, under the
    // suite's four shards on two cores).
    h.mutable_config().pipeline.linger = 2000ms;
    exo::testing::seen_keys_clear();

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    // A first batch turns the inbox's rotation once: the next batch that holds
    // both partitions takes <topic>_z's before <topic>'s.
    h.produce({payment("w-1", "acc-w", 1, 1)});
    REQUIRE(eventually([&] { return daemon.stats().applied == 1; }, 60s));
    REQUIRE(daemon.stats().batches == 1);
    produce_to(h, {{first, exo::Payment{"x-1", "acc-x", "CREDIT", 2, 1}},
                   {h.topic(), exo::Payment{"x-2", "acc-x", "CREDIT", 4, 2}}});
    REQUIRE(eventually([&] { return daemon.stats().applied == 3; }, 60s));
    daemon.stop();
    // Both in one batch, so one transaction decided and applied them...
    CHECK(daemon.stats().batches == 2);
    CHECK(h.balances() == Balances{{"acc-w", 1}, {"acc-x", 6}});
    // ...and handle_batch() saw sequence 1 before sequence 2.
    CHECK(exo::testing::seen_keys() == std::vector<std::string>{"w-1", "x-1", "x-2"});
    // The ledger announced them in that order too (its emits, in outbox order).
    std::vector<std::string> announced;
    for (const auto& row : query(h,
                                 "SELECT convert_from(value, 'UTF8')::json->>'eventId' FROM "
                                 "exo_outbox WHERE topic = 'ledger.applied' ORDER BY id"))
        announced.push_back(row[0].as<std::string>());
    CHECK(announced == std::vector<std::string>{"w-1", "x-1", "x-2"});
}

namespace {

// A claim key that holds a string instead of a claim hash (WRONGTYPE for
// claim.lua), in a batch with good records of its own and another partition.
void wrongtype_key_fails_only_its_record(exo::RedisDownPolicy policy) {
    PipelineHarness h({.name = "wrongtype",
                       .partitions = 2,
                       .on_redis_down = policy,
                       .max_attempts = 3,
                       .concurrency = 1});
    exo::RedisConnection redis(exo::testing::redis_options());
    const auto& config = h.config();
    const auto claim_of = [&](const std::string& key) {
        return exo::claim_key(config.redis.key_prefix, config.kafka.group_id, key);
    };
    redis.command({"SET", claim_of("bad-1"), "not a claim"});
    h.produce({payment("a-1", "acc-a", 1, 1, 0), payment("bad-1", "acc-b", 2, 1, 0),
               payment("d-1", "acc-d", 4, 1, 0), payment("c-1", "acc-c", 8, 1, 1),
               payment("c-2", "acc-c", 16, 2, 1)});
    const auto connections_before = redis_connections_received(redis);
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    REQUIRE(eventually([&] { return daemon.stats().finished() == 5; }, 30s));
    daemon.stop();

    // The other records of its batch, and the other partition, applied once;
    // d-1 waited behind it in its partition.
    CHECK(h.balances() == Balances{{"acc-a", 1}, {"acc-c", 24}, {"acc-d", 4}});
    const auto rows = processed(h);
    CHECK(rows.at("a-1") == "APPLIED");
    CHECK(rows.at("c-1") == "APPLIED");
    CHECK(rows.at("c-2") == "APPLIED");
    CHECK(rows.at("d-1") == "APPLIED");
    // The record of the bad key: counted, bounded, dead-lettered with the reason.
    const auto& bad = rows.at("bad-1");
    CHECK(bad.rfind("DEAD_LETTERED/gave up after 3 attempts", 0) == 0);
    CHECK(bad.find("WRONGTYPE") != std::string::npos);
    CHECK(bad.find(claim_of("bad-1")) != std::string::npos);
    CHECK(daemon.stats().dead_lettered == 1);
    CHECK(daemon.stats().applied == 4);
    // No claim of the batch was left behind PROCESSING (postgres_only: none was
    // taken and then forgotten), and the bad key is the operator's to repair.
    for (const auto* key : {"a-1", "c-1", "c-2", "d-1"})
        CHECK(redis.command({"HGET", claim_of(key), "state"}).str == "COMPLETED");
    CHECK(redis.command({"GET", claim_of("bad-1")}).str == "not a claim");
    // Redis answered every call: the worker's connection was never dropped and
    // reopened (one for the worker, at most one for its lease keeper).
    CHECK(redis_connections_received(redis) - connections_before <= 2);
}

}  // namespace

TEST_CASE(
    "a claim key holding the wrong type fails only its record: dead-lettered after max_attempts "
    "with the reason, the rest of its batch and the other partition apply, the connection stays") {
    wrongtype_key_fails_only_its_record(exo::RedisDownPolicy::pause);
}

TEST_CASE(
    "with on_redis_down postgres_only a claim key holding the wrong type fails only its record "
    "and no claim of its batch stays unreleased") {
    wrongtype_key_fails_only_its_record(exo::RedisDownPolicy::postgres_only);
}

namespace {

// Two workers (partitions 0 and 1 go to different workers: TopicPartitionHash)
// whose batches name entities acc-x and acc-y in crossing orders. Each batch
// ends with a poison record, so it runs carefully, record by record; slow
// handlers keep each worker on its first entity while it asks for the second
// (a deadlock is detected after deadlock_timeout, 1 s; lock_timeout is 5 s).
// Latest mode: whichever order the two partitions apply in, every good record
// ends APPLIED or STALE; max_attempts 1 makes any counted failure a dead letter.
// Returns the deadlocks PostgreSQL detected meanwhile.
std::int64_t run_crossing_careful_passes(bool entities_exist) {
    PipelineHarness h({.name = "carefulcross",
                       .partitions = 2,
                       .mode = exo::SequenceMode::latest,
                       .handler = "misbehaving_ledger",
                       .slow_for = 1500ms,
                       .max_attempts = 1});
    if (entities_exist)
        query(h,
              "INSERT INTO exo_sequences (handler, entity, last_sequence) VALUES"
              " ('misbehaving_ledger', 'acc-x', 0), ('misbehaving_ledger', 'acc-y', 0)");
    h.produce({payment("slow-a1", "acc-x", 1, 1, 0), payment("slow-a2", "acc-y", 2, 1, 0),
               payment("poison-a", "acc-p", 4, 1, 0), payment("slow-b1", "acc-y", 8, 2, 1),
               payment("slow-b2", "acc-x", 16, 2, 1), payment("poison-b", "acc-q", 32, 1, 1)});
    const auto deadlocks_before = exo::testing::deadlocks_detected();
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(120s));
    REQUIRE(eventually([&] { return daemon.stats().finished() == 6; }, 60s));
    daemon.stop();
    const auto rows = processed(h);
    for (const auto* key : {"slow-a1", "slow-a2", "slow-b1", "slow-b2"}) {
        CAPTURE(key);
        CHECK((rows.at(key) == "APPLIED" || rows.at(key) == "STALE"));
    }
    CHECK(rows.at("poison-a").rfind("DEAD_LETTERED", 0) == 0);
    CHECK(rows.at("poison-b").rfind("DEAD_LETTERED", 0) == 0);
    CHECK(daemon.stats().dead_lettered == 2);
    // Statistics reach pg_stat_database at the end of a transaction, a little later.
    std::this_thread::sleep_for(1s);
    return exo::testing::deadlocks_detected() - deadlocks_before;
}

}  // namespace

// Serial (scripts/integration.sh): it reads the server's deadlock counter.
TEST_CASE(
    "two batch runners whose careful passes meet shared entities in crossing orders neither "
    "deadlock "
    "nor dead-letter a good record" *
    doctest::test_suite("serial")) {
    CHECK(run_crossing_careful_passes(/*entities_exist=*/true) == 0);
}

// Serial (scripts/integration.sh): it reads the server's deadlock counter.
TEST_CASE(
    "careful passes that create the same new entities in crossing orders may deadlock, and the "
    "deadlock is NACKed uncounted: no good record is dead-lettered" *
    doctest::test_suite("serial")) {
    // New entities are not locked up front (there is no row yet): their creations
    // can still cross, and a deadlock there is contention, never an attempt.
    const auto deadlocks = run_crossing_careful_passes(/*entities_exist=*/false);
    MESSAGE("deadlocks PostgreSQL detected and exo NACKed: " << deadlocks);
}

// Serial (scripts/integration.sh): it watches pg_stat_activity for a lock wait.
TEST_CASE(
    "the set-based start inserts a group's dedup rows in key order, so a transaction holding "
    "one of its keys never deadlocks with it" *
    doctest::test_suite("serial")) {
    PipelineHarness h({.name = "dedupsorted", .partitions = 1, .concurrency = 1});
    const std::string group = h.config().kafka.group_id;
    const auto insert = [&](pqxx::transaction_base& tx, const std::string& key) {
        tx.exec_params(
            "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
            " kafka_partition, kafka_offset, outcome) VALUES ($1, $2, 0, 't', 0, 0, 'APPLIED')",
            group, key);
    };
    // Another transaction holds k-a, the key that sorts first.
    pqxx::connection other_connection(h.postgres_uri());
    pqxx::work other(other_connection);
    insert(other, "k-a");

    // The group, in partition order k-b, k-a: sorted, it waits for k-a before it
    // has written k-b; in partition order it would hold k-b while it waits.
    std::exception_ptr group_error;
    std::optional<exo::RecordsStart> started;
    std::thread group_thread([&] {
        try {
            pqxx::connection c(h.postgres_uri());
            exo::prepare_framework_statements(c);
            pqxx::work tx(c);
            const std::string kb = "k-b", ka = "k-a";
            const exo::TopicPartition tp{exo::Topic{"t"}, exo::Partition{0}};
            started = exo::start_records(tx, group,
                                         {{kb, exo::FencingToken{0}, tp, exo::Offset{0}, {}, {}},
                                          {ka, exo::FencingToken{0}, tp, exo::Offset{1}, {}, {}}},
                                         [](const auto&) -> std::vector<bool> {
                                             throw std::logic_error("no entity to be held");
                                         });
            tx.commit();
        } catch (...) {
            group_error = std::current_exception();
        }
    });
    REQUIRE(eventually(
        [&] {
            return query(h,
                         "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                         " AND datname = current_database()")[0][0]
                       .as<int>() == 1;
        },
        30s));
    // Now the other transaction takes k-b too, and commits: with the keys in
    // order nothing of the group is in its way (a deadlock would fail one side
    // after deadlock_timeout).
    CHECK_NOTHROW(insert(other, "k-b"));
    other.commit();
    group_thread.join();
    CHECK_FALSE(group_error);
    REQUIRE(started);
    REQUIRE(started->records.size() == 2);
    // Both keys were the other transaction's: duplicates of its rows.
    CHECK(started->records[0].duplicate);
    CHECK(started->records[1].duplicate);
}

TEST_CASE(
    "a worker's Redis session keeps a connection that only carried an error reply, and drops one "
    "an I/O failure closed") {
    exo::Config config;
    const auto options = exo::testing::redis_options();
    config.redis.host = options.host;
    config.redis.port = options.port;
    config.kafka.group_id = exo::testing::unique_name("session");
    const auto log = spdlog::default_logger()->clone("redis-session-test");
    exo::RedisSession session(config.claim, config.redis, config.kafka.group_id, "owner", *log,
                              [](int) { return 10s; });
    exo::ClaimStore* claims = session.claims();
    REQUIRE(claims != nullptr);
    // A failure while the connection is still open (an error reply: Redis
    // answered, e.g. OOM for a whole call) counts for the backoff; the
    // connection stays.
    REQUIRE(claims->claim({"k"}, 1s).size() == 1);
    session.failed();
    CHECK(session.failures() == 1);
    REQUIRE(session.connected() == claims);  // else `claims` dangles
    CHECK(session.claims() == claims);
    // The connection closed under it: dropped, and not reopened before the backoff.
    exo::RedisConnection admin(options);
    admin.command({"CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal"});
    CHECK_THROWS_AS(claims->claim({"k"}, 1s), exo::RedisIoError);
    session.failed();
    CHECK(session.connected() == nullptr);
    CHECK(session.claims() == nullptr);
}
