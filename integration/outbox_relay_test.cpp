// The outbox relay under real conditions (docs/outbox.md, "The relay"), against
// real PostgreSQL and the mock Kafka cluster: a row Kafka does not take parks
// its key alone and the operator can see and move it; an emit Kafka could
// never take is refused at emit(); a round's cost does not grow with the
// backlog of a few keys; a round is bounded by bytes; each group's relay
// publishes its own group's rows only.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <sstream>

#include "child_process.hpp"
#include "kafka/producer.hpp"
#include "outbox/outbox_admin.hpp"
#include "outbox/outbox_relay.hpp"
#include "outbox_support.hpp"
#include "pg/migrations.hpp"
#include "pg/session.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::check_per_key_order;
using exo::testing::emit_committed;
using exo::testing::numbered;
using exo::testing::payment;
using exo::testing::pending;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::relay_producer;
using exo::testing::RunningDaemon;
using exo::testing::topic_size;
using exo::testing::wait_until;

namespace {

// `exo outbox ...` on the harness's config, to its end.
exo::testing::FinishedChild exo_outbox(const PipelineHarness& h, std::vector<std::string> args) {
    const std::string config = "/tmp/" + h.schema() + "-outbox.yaml";
    std::ofstream(config) << h.config_yaml();
    args.insert(args.begin(), "outbox");
    args.insert(args.begin() + 2, {"--config", config});
    const std::string log = "/tmp/" + exo::testing::unique_name("outbox_cli") + ".log";
    auto finished = exo::testing::run_to_end(exo::testing::exo_binary(), args, {}, log, 60s);
    REQUIRE_MESSAGE(finished.has_value(), "still running after 60 s: " << log);
    return *finished;
}

nlohmann::json listed(const PipelineHarness& h) {
    const auto f = exo_outbox(h, {"list", "--json"});
    INFO(f.output);
    REQUIRE(f.exit_code == 0);
    // The document: from its own "[" line to its "]" line (log lines may surround it).
    std::istringstream in(f.output);
    std::string line, doc;
    while (std::getline(in, line)) {
        if (doc.empty() && line != "[" && line != "[]") continue;
        doc += line + "\n";
        if (line == "]" || line == "[]") break;
    }
    REQUIRE(!doc.empty());
    return nlohmann::json::parse(doc);
}

std::int64_t row_id(const PipelineHarness& h, const std::string& where) {
    return h.count("SELECT id FROM exo_outbox WHERE " + where);
}

// Runs rounds on a session of its own until one claims nothing; returns each
// round's claim.
std::vector<std::size_t> rounds(exo::OutboxRelay& relay, const exo::Config& config) {
    auto c = exo::open_postgres_session(config.postgres);
    std::vector<std::size_t> claimed;
    while (claimed.size() < 1000) {
        claimed.push_back(relay.relay_once(*c));
        if (claimed.back() == 0) break;
    }
    return claimed;
}

}  // namespace

TEST_CASE(
    "a row Kafka refuses parks its key alone: every other key publishes, the key's later rows "
    "wait behind it, and the metric and exo outbox list, discard and reroute take it out") {
    PipelineHarness h({.name = "outbox_park", .partitions = 1});
    const std::string out = h.out_topic();
    const std::string refused = out + ".refused";
    h.cluster().create_topic(out, 3);
    h.cluster().create_topic(refused, 1);
    // Kafka refuses every produce to this topic, as without its ACLs.
    rd_kafka_mock_topic_set_error(h.cluster().raw(), refused.c_str(),
                                  RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    // Written past emit()'s check (as before it existed): one byte over the
    // producer's message.max.bytes as librdkafka counts it, so produce()
    // refuses it; and a row exactly at the limit, which Kafka takes.
    const std::string over(exo::kDefaultMaxMessageBytes - 36 - 51 - 3 + 1, 'x');
    const std::string at(exo::kDefaultMaxMessageBytes - 36 - 51 - 4, 'y');
    emit_committed(h, {{out, "big", over, {}},
                       {refused, "acl", "acl#1", {}},
                       {out, "big", "big#2", {}},
                       {refused, "acl", "acl#2", {}},
                       {out, "edge", at, {}}});
    emit_committed(h, numbered(out, 12, 50));  // 600 ordinary emits
    h.mutable_config().outbox.batch_size = 249;
    exo::PipelineStats stats;
    exo::Failpoints none;
    {
        exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id,
                               stats, none, relay_producer(h));
        relay.start();
        wait_until(
            "every key but the two refused ones to drain", 60s, [&] { return pending(h); },
            [](std::int64_t n) { return n == 4; });
        wait_until(
            "the parked keys in the gauge", 30s, [&] { return stats.outbox_parked_units.load(); },
            [](std::int64_t n) { return n == 2; });
    }
    CHECK(topic_size(h, out, 3) == 601);
    CHECK(stats.outbox_unit_failures.load() >= 2);
    CHECK(stats.outbox_published.load() == 601);
    auto published = read_topic(h.bootstrap(), out, 601);
    std::vector<exo::Record> numbered_ones;
    for (auto& r : published)
        if (r.value.find('#') != std::string::npos) numbered_ones.push_back(std::move(r));
    CHECK(check_per_key_order(numbered_ones) == 600);

    const auto big = row_id(h, "octet_length(value) = " + std::to_string(over.size()));
    const auto acl = row_id(h, "value = 'acl#1'");
    const auto acl2 = row_id(h, "value = 'acl#2'");
    auto list = listed(h);
    REQUIRE(list.size() == 2);
    std::map<std::int64_t, nlohmann::json> by_id;
    for (const auto& row : list) by_id[row.at("id").get<std::int64_t>()] = row;
    REQUIRE(by_id.count(big) == 1);
    REQUIRE(by_id.count(acl) == 1);
    CHECK(by_id[big].at("reason").get<std::string>().find("MSG_SIZE_TOO_LARGE") !=
          std::string::npos);
    CHECK(by_id[big].at("waiting_behind") == 1);
    CHECK(by_id[big].at("key") == "big");
    // librdkafka retries a topic whose metadata says "not authorized" until the
    // message times out (or names the error): either way the row's reason.
    const auto acl_reason = by_id[acl].at("reason").get<std::string>();
    CHECK((acl_reason.find("AUTHORIZATION") != std::string::npos ||
           acl_reason.find("_MSG_TIMED_OUT") != std::string::npos));
    CHECK(by_id[acl].at("topic") == refused);

    // Only a key's first pending row can be taken out: its order holds.
    const auto behind = exo_outbox(h, {"discard", "--id", std::to_string(acl2)});
    CHECK(behind.exit_code == 1);
    CHECK(behind.output.find("only a key's first pending row") != std::string::npos);
    const auto discarded = exo_outbox(h, {"discard", "--id", std::to_string(big)});
    INFO(discarded.output);
    CHECK(discarded.exit_code == 0);
    const auto rerouted = exo_outbox(h, {"reroute", "--id", std::to_string(acl), "--topic", out});
    INFO(rerouted.output);
    CHECK(rerouted.exit_code == 0);
    CHECK(h.count("SELECT count(*) FROM exo_outbox_units") == 0);

    // The keys go on: big#2 after the discarded row, acl#1 on its new topic;
    // acl#2 still goes to the refused topic and parks that key again.
    exo::PipelineStats again;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, again,
                           none, relay_producer(h));
    relay.start();
    wait_until(
        "the moved row and the one behind the discarded row to be published", 60s,
        [&] { return topic_size(h, out, 3); }, [](std::int64_t n) { return n == 603; });
    wait_until(
        "the refused key to park again", 30s, [&] { return listed(h).size(); },
        [](std::size_t n) { return n == 1; });
    relay.stop();
    CHECK(listed(h)[0].at("id") == acl2);
    CHECK(pending(h) == 1);
}

TEST_CASE(
    "an emit over the producer's message.max.bytes is refused at emit() as a PermanentError and "
    "dead-lettered, and every other emit is published") {
    // The shipped ledger emits each payment's value to ledger.applied: a payment
    // Kafka takes on its own (no headers) is too large with exo-outbox-id.
    PipelineHarness h({.name = "outbox_big_emit", .partitions = 1, .with_sequence = false});
    auto workload = exo::generate_payments(
        {.count = 300, .accounts = 6, .duplicate_ratio = 0, .partitions = 1, .seed = 5});
    h.produce(workload);
    std::string value = payment("huge-1", "acc-h", 5, 1).payment.json();
    value.insert(value.size() - 1, ",\"memo\":\"\"");
    value.insert(value.size() - 2,
                 std::string(exo::kDefaultMaxMessageBytes - 36 - 8 - value.size(), 'm'));
    {
        exo::KafkaProducer producer({h.bootstrap(), {}, {}});
        producer.produce({h.topic(), 0, std::string("huge-1"), value, {}});
        producer.flush(10s);
    }
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(120s));
    wait_until(
        "the outbox to drain", 60s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
    CHECK(topic_size(h, "ledger.applied", 2) == static_cast<std::int64_t>(workload.unique_events));
    auto dead = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dead.size() == 1);
    CHECK(exo::testing::header(dead[0], "exo-error").find("message.max.bytes") !=
          std::string::npos);
    // The writer tied every row to the daemon's group.
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE consumer_group = '" +
                  h.config().kafka.group_id + "'") ==
          static_cast<std::int64_t>(workload.unique_events));
}

// Serial (scripts/integration.sh): 200,000 rows within a 1 s statement_timeout, and pg_statio.
TEST_CASE(
    "a round over a large backlog of few keys reads only the rows it takes: 200,000 pending rows "
    "of 10 keys are claimed within a 1 s statement_timeout" *
    doctest::test_suite("serial")) {
    PipelineHarness h({.name = "outbox_backlog", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 2);
    for (int chunk = 0; chunk < 4; ++chunk) emit_committed(h, numbered(out, 10, 5000));
    REQUIRE(pending(h) == 200000);
    auto& config = h.mutable_config();
    config.postgres.statement_timeout = 1000ms;
    config.postgres.lock_timeout = 500ms;
    config.outbox.batch_size = 500;
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(config.outbox, config.postgres, config.kafka.group_id, stats, none,
                           relay_producer(h));
    auto c = exo::open_postgres_session(config.postgres);
    // The pages of the pending table's ordering indexes a round reads, as
    // PostgreSQL counts them (flushed from the relay's session on demand, read
    // without a snapshot). Not the primary key's (group, id): its probes
    // (locks, marks) are a few pages per row taken whatever the backlog (the
    // round of the oldest rows reads a range of it, sql/0016).
    pqxx::connection observer(h.postgres_uri());
    auto index_reads = [&] {
        pqxx::nontransaction(*c).exec("SELECT pg_stat_force_next_flush()");
        pqxx::nontransaction tx(observer);
        tx.exec("SET stats_fetch_consistency = none");
        return tx
            .exec(
                "SELECT coalesce(sum(idx_blks_hit + idx_blks_read), 0) FROM"
                " pg_statio_user_indexes WHERE relname = 'exo_outbox_pending'"
                " AND indexrelname <> 'exo_outbox_pending_pkey'"
                " AND schemaname = current_schema()")[0][0]
            .as<std::int64_t>();
    };
    auto rounds_read_little = [&](const std::string& path) {
        for (int round = 0; round < 3; ++round) {
            const auto before = index_reads();
            CHECK(relay.relay_once(*c) == 500);
            // The oldest rows in id order, or units, heads and twice each
            // unit's share of the round (a few pages each); not the backlog's
            // ~1,000 pages per unit.
            const auto read = index_reads() - before;
            MESSAGE(path << " round " << round << " read " << read << " index pages");
            CHECK(read < 1000);
        }
    };
    // No unit parked: the oldest rows in id order.
    rounds_read_little("oldest rows");
    // A unit parked: the skip scan over units, leaving that one out.
    pqxx::nontransaction(observer).exec(
        "INSERT INTO exo_outbox_units (consumer_group, topic, ordering_key, failures,"
        " next_attempt_at, failed_id, reason) SELECT consumer_group, topic, ordering_key, 1,"
        " now() + interval '1 hour', id, 'test' FROM exo_outbox_pending ORDER BY id LIMIT 1");
    rounds_read_little("units");
    CHECK(pending(h) == 200000 - 6 * 500);
}

TEST_CASE(
    "a round of the oldest rows reads the exo_outbox rows it claims, not the sent rows kept before "
    "them, even when PostgreSQL's statistics still count the sent rows as pending") {
    PipelineHarness h({.name = "outbox_sent_before", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    emit_committed(h, numbered(out, 10, 2000));
    pqxx::connection observer(h.postgres_uri());
    // Statistics taken while all 20,000 rows were pending, then all but the
    // last 10 sent (kept for retention), as after a burst the relay caught up with.
    pqxx::nontransaction(observer).exec(
        "ANALYZE exo_outbox_pending; ANALYZE exo_outbox;"
        " DELETE FROM exo_outbox_pending WHERE id <= (SELECT max(id) - 10 FROM exo_outbox)");
    REQUIRE(pending(h) == 10);
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    auto c = exo::open_postgres_session(h.config().postgres);
    // exo_outbox's heap and index pages a round reads, as in the test above.
    auto outbox_reads = [&] {
        pqxx::nontransaction(*c).exec("SELECT pg_stat_force_next_flush()");
        // The observer's own reads (the ANALYZE) too, before the first reading.
        pqxx::nontransaction(observer).exec("SELECT pg_stat_force_next_flush()");
        pqxx::nontransaction tx(observer);
        tx.exec("SET stats_fetch_consistency = none");
        return tx
            .exec(
                "SELECT coalesce(heap_blks_hit + heap_blks_read + idx_blks_hit + idx_blks_read, 0)"
                " FROM pg_statio_user_tables WHERE relname = 'exo_outbox'"
                " AND schemaname = current_schema()")[0][0]
            .as<std::int64_t>();
    };
    const auto before = outbox_reads();
    CHECK(relay.relay_once(*c) == 10);
    const auto read = outbox_reads() - before;
    MESSAGE("the round read " << read << " pages of exo_outbox");
    // A few pages per claimed row (its size, then its value): 53 measured. A
    // merge join walking the 19,990 sent rows before them read 657.
    CHECK(read < 200);
    CHECK(pending(h) == 0);
}

TEST_CASE(
    "a round of the oldest rows never takes a key's rows on both sides of a row another relay "
    "holds") {
    PipelineHarness h({.name = "outbox_gap", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    emit_committed(h, numbered(out, 1, 3));  // one key: seqs 1, 2, 3
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    auto c = exo::open_postgres_session(h.config().postgres);
    // Another relay holds the key's second row (its head published meanwhile).
    pqxx::connection other(h.postgres_uri());
    pqxx::work held(other);
    held.exec(
        "SELECT id FROM exo_outbox_pending WHERE id ="
        " (SELECT id FROM exo_outbox_pending ORDER BY id OFFSET 1 LIMIT 1) FOR UPDATE");
    // The head only: the third row waits behind the held second.
    CHECK(relay.relay_once(*c) == 1);
    CHECK(pending(h) == 2);
    held.abort();
    CHECK(relay.relay_once(*c) == 2);
    auto records = read_topic(h.bootstrap(), out, 3);
    CHECK(check_per_key_order(records) == 3);
}

TEST_CASE("a round is bounded by bytes as well as rows, and always takes at least one row") {
    PipelineHarness h({.name = "outbox_bytes", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    std::vector<exo::OutboxMessage> rows;
    for (int n = 1; n <= 6; ++n)
        for (const std::string key : {"a", "b"})
            rows.push_back({out, key, key + "#" + std::to_string(n) + std::string(3000, '.'), {}});
    emit_committed(h, rows);
    emit_committed(h, {{out, "c", "c#1" + std::string(50000, '.'), {}}});
    auto& config = h.mutable_config();
    config.outbox.max_round_bytes = 10000;  // three rows of ~3,010 bytes
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(config.outbox, config.postgres, config.kafka.group_id, stats, none,
                           relay_producer(h));
    const auto claimed = rounds(relay, config);
    // 13 rows: the 50 kB row alone in its round, the others three by three.
    CHECK(claimed.back() == 0);
    std::multiset<std::size_t> sizes(claimed.begin(), claimed.end() - 1);
    CHECK(sizes == std::multiset<std::size_t>{1, 3, 3, 3, 3});
    auto records = read_topic(h.bootstrap(), out, 13);
    for (auto& r : records) r.value = r.value.substr(0, r.value.find('.'));
    CHECK(check_per_key_order(records) == 13);
}

TEST_CASE("each group's relay publishes only its own group's rows, with its own brokers") {
    PipelineHarness h({.name = "outbox_groups", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    exo::Config a = h.config();
    exo::Config b = h.config();
    b.kafka.group_id += "_b";
    emit_committed(h, numbered(out, 2, 5, "a-"), a.kafka.group_id);
    emit_committed(h, numbered(out, 2, 5, "b-"), b.kafka.group_id);
    // One key emitted by both groups: each group numbers its own rows.
    emit_committed(h, {{out, "shared", "shared-a#1", {}}}, a.kafka.group_id);
    emit_committed(h, {{out, "shared", "shared-b#1", {}}}, b.kafka.group_id);
    exo::PipelineStats stats_a, stats_b;
    exo::Failpoints none;
    exo::OutboxRelay relay_a(a.outbox, a.postgres, a.kafka.group_id, stats_a, none,
                             relay_producer(h));
    rounds(relay_a, a);
    CHECK(stats_a.outbox_published.load() == 11);
    CHECK(pending(h) == 11);
    auto first = read_topic(h.bootstrap(), out, 11);
    REQUIRE(first.size() == 11);
    for (const auto& r : first) CHECK(r.value.find("b") == std::string::npos);
    exo::OutboxRelay relay_b(b.outbox, b.postgres, b.kafka.group_id, stats_b, none,
                             relay_producer(h));
    rounds(relay_b, b);
    CHECK(stats_b.outbox_published.load() == 11);
    CHECK(pending(h) == 0);
}

TEST_CASE(
    "migration 0007 gives rows written before it to the only group that processed records, "
    "else to no group") {
    for (const bool one_group : {true, false}) {
        auto schema = exo::testing::unique_name("outbox_legacy");
        std::replace(schema.begin(), schema.end(), '-', '_');
        pqxx::connection c(exo::testing::postgres_uri());
        pqxx::nontransaction tx(c);
        tx.exec("CREATE SCHEMA " + schema);
        tx.exec("SET search_path TO " + schema);
        std::string later;
        for (const auto& m : exo::framework_migrations()) {
            if (m.name >= "0010") continue;  // drops sent_at, which the checks below read
            if (m.name >= "0007") {
                later += m.sql + "\n";
                continue;
            }
            tx.exec(m.sql);
        }
        tx.exec(
            "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, outcome,"
            " topic, kafka_partition, kafka_offset) VALUES ('g1', 'k1', 1, 'APPLIED', 't', 0, 1)" +
            std::string(one_group ? "" : ", ('g2', 'k2', 1, 'APPLIED', 't', 0, 2)"));
        tx.exec(
            "INSERT INTO exo_outbox (topic, message_key, value, ordering_key, seq, sent_at)"
            " VALUES ('t', 'a', 'v1', sha256('a'), 1, now()), ('t', 'a', 'v2', sha256('a'), 2,"
            " NULL)");
        tx.exec(
            "INSERT INTO exo_outbox_keys (topic, ordering_key, last_seq) VALUES ('t',"
            " sha256('a'), 2)");
        tx.exec(later);
        const std::string owner = one_group ? "g1" : "";
        CHECK(tx.exec("SELECT consumer_group FROM exo_outbox WHERE sent_at IS NULL")[0][0]
                  .as<std::string>() == owner);
        CHECK(tx.exec("SELECT consumer_group FROM exo_outbox WHERE sent_at IS NOT NULL")[0][0]
                  .as<std::string>() == "");
        CHECK(tx.exec("SELECT consumer_group FROM exo_outbox_keys")[0][0].as<std::string>() ==
              owner);
        tx.exec("DROP SCHEMA " + schema + " CASCADE");
    }
}

namespace {

// Rebuilds the harness's outbox tables as migrations 0006-0009 left them (rows
// marked sent by sent_at), so a test can write rows the old way and then run
// migration 0010 on them.
void outbox_before_0010(pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    tx.exec("DROP TABLE exo_outbox_pending, exo_outbox, exo_outbox_keys, exo_outbox_units CASCADE");
    tx.exec("DROP FUNCTION exo_outbox_pending_insert()");
    for (const auto& m : exo::framework_migrations())
        if (m.name.starts_with("0006") || m.name.starts_with("0007")) tx.exec(m.sql);
}

void migrate_0010(pqxx::connection& c) {
    for (const auto& m : exo::framework_migrations())
        if (m.name.starts_with("0010")) pqxx::nontransaction(c).exec(m.sql);
}

// The values ("<key>#<n>") of records per key, in the order they were published.
std::map<std::string, std::vector<std::string>> values_by_key(
    const std::vector<exo::Record>& records) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& r : records) out[r.value.substr(0, r.value.find('#'))].push_back(r.value);
    return out;
}

}  // namespace

TEST_CASE(
    "migration 0010 keeps rows written before it pending: the relay publishes them in order and "
    "with their exo-outbox-id after it, before the unit's new rows (an older exo's writer's too), "
    "and never a row sent before") {
    PipelineHarness h({.name = "outbox_lean_migration", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 2);
    const auto& group = h.config().kafka.group_id;
    pqxx::connection c(h.postgres_uri());
    outbox_before_0010(c);
    {
        pqxx::work tx(c);
        // Unit a: a#1 sent, a#2 and a#3 pending; unit b: b#1 pending.
        tx.exec_params(
            "INSERT INTO exo_outbox (consumer_group, topic, message_key, value, ordering_key, seq,"
            " sent_at, message_id) VALUES"
            " ($1, $2, 'a', 'a#1', sha256('a'), 1, now(), gen_random_uuid()),"
            " ($1, $2, 'a', 'a#2', sha256('a'), 2, NULL, 'a2a2a2a2-0000-4000-8000-000000000002'),"
            " ($1, $2, 'b', 'b#1', sha256('b'), 1, NULL, gen_random_uuid()),"
            " ($1, $2, 'a', 'a#3', sha256('a'), 3, NULL, gen_random_uuid())",
            group, out);
        tx.exec_params(
            "INSERT INTO exo_outbox_keys (consumer_group, topic, ordering_key, last_seq) VALUES"
            " ($1, $2, sha256('a'), 3), ($1, $2, sha256('b'), 1)",
            group, out);
        tx.commit();
    }
    migrate_0010(c);
    CHECK(pending(h) == 3);
    // Written after the migration, each unit's seq going on from its counter:
    // b#2 by this writer, a#4 as the writer of an older exo still running during
    // the upgrade writes it (no exo_outbox_pending of its own).
    emit_committed(h, {{out, "b", "b#2", {}}});
    {
        pqxx::work tx(c);
        tx.exec_params(
            "WITH s AS (UPDATE exo_outbox_keys SET last_seq = last_seq + 1 WHERE consumer_group"
            " = $1 AND topic = $2 AND ordering_key = sha256('a') RETURNING last_seq)"
            " INSERT INTO exo_outbox (consumer_group, topic, message_key, value, headers,"
            " ordering_key, seq) SELECT $1, $2, 'a', 'a#4', '[]', sha256('a'), last_seq FROM s",
            group, out);
        tx.commit();
    }
    CHECK(h.count("SELECT count(*) FROM exo_outbox_pending WHERE topic = '" + out +
                  "' AND seq = 4") == 1);

    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    auto session = exo::open_postgres_session(h.config().postgres);
    while (relay.relay_once(*session) > 0) {
    }
    CHECK(pending(h) == 0);
    CHECK(stats.outbox_published.load() == 5);
    const auto records = read_topic(h.bootstrap(), out, 5);
    auto published = values_by_key(records);
    CHECK(published["a"] == std::vector<std::string>{"a#2", "a#3", "a#4"});
    CHECK(published["b"] == std::vector<std::string>{"b#1", "b#2"});
    for (const auto& r : records)
        if (r.value == "a#2") {
            const auto* id = r.header("exo-outbox-id");
            REQUIRE(id != nullptr);
            CHECK(id->value.value_or("") == "a2a2a2a2-0000-4000-8000-000000000002");
        }
    // Sent rows are kept for retention, old and new.
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE topic = '" + out + "'") == 6);
}

TEST_CASE(
    "marking a round sent takes its rows out of the pending set and keeps them, or deletes them "
    "with retention 0; a row Kafka refuses stays pending with its unit's later rows") {
    for (const bool keep : {true, false}) {
        PipelineHarness h({.name = "outbox_lean_mark", .partitions = 1});
        h.mutable_config().outbox.retention = std::chrono::hours(keep ? 24 : 0);
        const std::string out = h.out_topic();
        h.cluster().create_topic(out, 1);
        const std::string over(exo::kDefaultMaxMessageBytes - 36 - 51 - 3 + 1, 'x');
        emit_committed(h, {{out, "ok", "ok#1", {}},
                           {out, "ok", "ok#2", {}},
                           {out, "bad", over, {}},
                           {out, "bad", "bad#2", {}}});
        exo::PipelineStats stats;
        exo::Failpoints none;
        exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id,
                               stats, none, relay_producer(h));
        auto session = exo::open_postgres_session(h.config().postgres);
        CHECK(relay.relay_once(*session) == 4);
        CHECK(stats.outbox_published.load() == 2);
        // Unit "bad" keeps both rows pending, in seq order behind the refused one.
        CHECK(h.count("SELECT count(*) FROM exo_outbox_pending p JOIN exo_outbox o USING (id)"
                      " WHERE o.message_key = 'bad' AND p.seq = o.seq") == 2);
        CHECK(pending(h) == 2);
        CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE message_key = 'ok'") ==
              (keep ? 2 : 0));
        CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE message_key = 'bad'") == 2);
        CHECK(read_topic(h.bootstrap(), out, 2).size() == 2);
    }
}

TEST_CASE(
    "the rows of a key before its refused row are published once and marked, and the retry "
    "does not publish them again") {
    PipelineHarness h({.name = "outbox_prefix", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    const std::string over(exo::kDefaultMaxMessageBytes - 36 - 51 - 3 + 1, 'x');
    emit_committed(h, {{out, "pre", "pre#1", {}}, {out, "pre", over, {}}});
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    auto c = exo::open_postgres_session(h.config().postgres);
    CHECK(relay.relay_once(*c) == 2);
    CHECK(pending(h) == 1);
    CHECK(exo::testing::partition_end(h.bootstrap(), out) == 1);
    wait_until(
        "the parked key's next attempt", 30s, [&] { return relay.relay_once(*c); },
        [](std::size_t n) { return n > 0; });
    CHECK(pending(h) == 1);
    CHECK(exo::testing::partition_end(h.bootstrap(), out) == 1);
    CHECK(stats.outbox_unit_failures.load() == 2);
}

TEST_CASE(
    "migration 0016 gives a pending row two index entries, its unit's and (group, id), and keeps "
    "the rows pending before it: the relay publishes them in order and the operator command "
    "finds them by id") {
    PipelineHarness h({.name = "outbox_pending_key", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    pqxx::connection c(h.postgres_uri());
    // exo_outbox_pending as sql/0014 left it: a primary key (id) and (group, id).
    pqxx::nontransaction(c).exec(
        "ALTER TABLE exo_outbox_pending DROP CONSTRAINT exo_outbox_pending_pkey;"
        " ALTER TABLE exo_outbox_pending ADD PRIMARY KEY (id);"
        " CREATE INDEX exo_outbox_pending_oldest ON exo_outbox_pending (consumer_group, id)");
    emit_committed(h, numbered(out, 3, 4));  // 3 keys, 4 rows each, pending
    REQUIRE(pending(h) == 12);
    for (const auto& m : exo::framework_migrations())
        if (m.name.starts_with("0016")) pqxx::nontransaction(c).exec(m.sql);
    // One index entry per pending row for the unit, one for (group, id): not a
    // third for id alone.
    CHECK(h.count("SELECT count(*) FROM pg_indexes WHERE tablename = 'exo_outbox_pending'"
                  " AND schemaname = current_schema()") == 2);
    CHECK(h.count("SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                  " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'exo_outbox_pending'::regclass"
                  " AND i.indisprimary AND a.attname IN ('consumer_group', 'id')") == 2);
    // The operator command takes a unit's head (key-0#1) by id.
    const auto head = h.count("SELECT min(id) FROM exo_outbox_pending");
    exo::discard_outbox_row(c, h.config().kafka.group_id, head);
    CHECK(pending(h) == 11);
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    auto session = exo::open_postgres_session(h.config().postgres);
    while (relay.relay_once(*session) > 0) {
    }
    CHECK(pending(h) == 0);
    auto published = values_by_key(read_topic(h.bootstrap(), out, 11));
    CHECK(published["key-0"] == std::vector<std::string>{"key-0#2", "key-0#3", "key-0#4"});
    for (const std::string key : {"key-1", "key-2"})
        CHECK(published[key] ==
              std::vector<std::string>{key + "#1", key + "#2", key + "#3", key + "#4"});
}

TEST_CASE(
    "a pending row whose exo_outbox row was deleted by hand is never published and holds its key's "
    "later rows, while every other key publishes") {
    PipelineHarness h({.name = "outbox_orphan", .partitions = 1});
    const std::string out = h.out_topic();
    h.cluster().create_topic(out, 1);
    emit_committed(h, numbered(out, 2, 3));  // key-0#1, key-1#1, key-0#2...
    {
        pqxx::connection hand(h.postgres_uri());
        pqxx::nontransaction(hand).exec(
            "DELETE FROM exo_outbox WHERE id = (SELECT min(id) FROM exo_outbox)");  // key-0#1
    }
    exo::PipelineStats stats;
    exo::Failpoints none;
    exo::OutboxRelay relay(h.config().outbox, h.config().postgres, h.config().kafka.group_id, stats,
                           none, relay_producer(h));
    auto c = exo::open_postgres_session(h.config().postgres);
    CHECK(relay.relay_once(*c) == 3);
    CHECK(relay.relay_once(*c) == 0);
    CHECK(pending(h) == 3);
    auto published = values_by_key(read_topic(h.bootstrap(), out, 3));
    CHECK(published["key-1"] == std::vector<std::string>{"key-1#1", "key-1#2", "key-1#3"});
    CHECK(published["key-0"].empty());
}
