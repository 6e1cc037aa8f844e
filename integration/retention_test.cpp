// Retention (docs/design.md#retention) against real PostgreSQL: the pruner
// clears a large backlog of expired rows while rows within retention stay,
// prunes every table exo owns (dedup rows, gap sightings, sent outbox rows,
// idle outbox key counters also with outbox retention 0, finished replay
// tickets), never deletes a pending outbox row or a counter a writer holds,
// leaves other groups' rows alone, and retries a failed pass.
#include <doctest/doctest.h>

#include <future>
#include <pqxx/pqxx>

#include "pipeline_harness.hpp"
#include "retention/retention_pruner.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::RetentionPruner;
using exo::RetentionStats;
using exo::testing::PipelineHarness;
using exo::testing::wait_until;

namespace {

void exec(const PipelineHarness& h, const std::string& sql) {
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction(c).exec(sql);
}

// `n` dedup rows of `group` named `<prefix>-<i>`, processed `age` ago.
void dedup_rows(const PipelineHarness& h, const std::string& group, const std::string& prefix,
                long n, const std::string& age) {
    exec(h,
         "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
         " kafka_partition, kafka_offset, outcome, processed_at) SELECT '" +
             group + "', '" + prefix + "-' || i, 1, 't', 0, i, 'APPLIED', now() - interval '" +
             age + "' - i * interval '1 ms' FROM generate_series(1, " + std::to_string(n) + ") i");
}

std::int64_t keys_like(const PipelineHarness& h, const std::string& prefix) {
    return h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key LIKE '" + prefix +
                   "-%'");
}

// Marks the newest outbox row sent, as the relay does: its pending row goes
// (every inserted row gets one, sql/0010_exo_outbox_lean.sql).
void sent_last(const PipelineHarness& h) {
    exec(h, "DELETE FROM exo_outbox_pending WHERE id = (SELECT max(id) FROM exo_outbox)");
}

// An outbox row of unit (topic, key), sent and written `written_ago` ago
// (empty: pending, written 30 days ago).
void outbox_row(const PipelineHarness& h, const std::string& topic, const std::string& key, int seq,
                const std::string& written_ago) {
    const std::string written =
        "now() - interval '" + (written_ago.empty() ? "30 days" : written_ago) + "'";
    exec(h,
         "INSERT INTO exo_outbox (consumer_group, topic, message_key, value, ordering_key, seq,"
         " created_at) VALUES ('" +
             h.config().kafka.group_id + "', '" + topic + "', '" + key + "', 'v', sha256('" + key +
             "'), " + std::to_string(seq) + ", " + written + ")");
    if (!written_ago.empty()) sent_last(h);
}

void counter(const PipelineHarness& h, const std::string& topic, const std::string& key,
             const std::string& used_ago, std::string group = "") {
    if (group.empty()) group = h.config().kafka.group_id;
    exec(h,
         "INSERT INTO exo_outbox_keys (consumer_group, topic, ordering_key, last_seq, updated_at)"
         " VALUES ('" +
             group + "', '" + topic + "', sha256('" + key + "'), 1, now() - interval '" + used_ago +
             "')");
}

std::int64_t counters(const PipelineHarness& h, const std::string& topic) {
    return h.count("SELECT count(*) FROM exo_outbox_keys WHERE topic = '" + topic + "'");
}

// A replay ticket of `key`, requested `ago` ago; `produced` sets produced_at.
void ticket(const PipelineHarness& h, const std::string& key, const std::string& ago,
            bool produced) {
    exec(h,
         "INSERT INTO exo_replays (consumer_group, idempotency_key, topic, kafka_partition,"
         " kafka_offset, dead_lettered_at, requested_at, requested_by, produced_at) VALUES ('" +
             h.config().kafka.group_id + "', '" + key + "', 't', 0, 0, now() - interval '" + ago +
             "', now() - interval '" + ago + "', 'test', " +
             (produced ? "now() - interval '" + ago + "'" : std::string("NULL")) + ")");
}

std::int64_t tickets(const PipelineHarness& h, const std::string& key) {
    return h.count("SELECT count(*) FROM exo_replays WHERE idempotency_key = '" + key + "'");
}

// One pass on a session of its own, as the running pruner makes it.
std::size_t one_pass(RetentionPruner& pruner, const PipelineHarness& h) {
    pqxx::connection c(h.postgres_uri());
    std::stop_source running;
    return pruner.prune_until_caught_up(c, running.get_token());
}

}  // namespace

// Serial (scripts/integration.sh): 300,000 rows.
TEST_CASE("a running pruner clears 300,000 expired dedup rows and keeps those within retention" *
          doctest::test_suite("serial")) {
    PipelineHarness h({.name = "prune_backlog", .partitions = 1});
    h.mutable_config().postgres.dedup_retention = std::chrono::hours(24 * 30);
    const auto group = h.config().kafka.group_id;
    dedup_rows(h, group, "expired", 300000, "31 days");
    dedup_rows(h, group, "kept", 1000, "29 days");
    dedup_rows(h, "another-group", "theirs", 1000, "31 days");  // not this group's to prune

    exo::PipelineStats stats;
    RetentionPruner pruner(h.config().retention, h.config().postgres, h.config().outbox.retention,
                           h.config().kafka.group_id, stats);
    pruner.start();
    // A bound on function, far above need (the default pace clears it in about
    // 12 s): the pruner of old deleted 100,000 rows and then slept 10 minutes.
    wait_until(
        "the expired rows to be pruned", 60s, [&] { return keys_like(h, "expired"); },
        [](std::int64_t left) { return left == 0; });
    wait_until(
        "the lag gauge to show retention caught up", 10s,
        [&] { return stats.retention.lag_ms[RetentionStats::processed].load(); },
        [](std::int64_t lag) { return lag == 0; });
    pruner.stop();
    CHECK(keys_like(h, "kept") == 1000);
    CHECK(keys_like(h, "theirs") == 1000);
    CHECK(stats.retention.pruned[RetentionStats::processed].load() == 300000);
}

TEST_CASE("every table exo owns is pruned, and nothing within retention or pending goes") {
    PipelineHarness h({.name = "prune_tables", .partitions = 1});
    auto& config = h.mutable_config();
    config.postgres.dedup_retention = std::chrono::hours(24 * 30);
    config.outbox.retention = std::chrono::hours(24 * 7);
    const auto group = config.kafka.group_id;
    dedup_rows(h, group, "expired", 10, "31 days");
    dedup_rows(h, group, "kept", 10, "29 days");
    exec(h,
         "INSERT INTO exo_sequence_gaps (consumer_group, idempotency_key, first_seen) VALUES ('" +
             group + "', 'gap-old', now() - interval '31 days'), ('" + group +
             "', 'gap-new', now() - interval '29 days'), ('another-group', 'gap-theirs',"
             " now() - interval '31 days')");
    const std::string out = "out_" + group;
    outbox_row(h, out, "a", 1, "8 days");             // sent, expired
    outbox_row(h, out, "a", 2, "6 days");             // sent, within retention
    outbox_row(h, out, "b", 1, "");                   // pending for 30 days: never expired
    counter(h, out, "a", "6 days");                   // unit a has a row left
    counter(h, out, "b", "30 days");                  // unit b has a pending row
    counter(h, out, "c", "8 days");                   // unit c: no row, idle past the retention
    counter(h, out, "d", "6 days");                   // unit d: no row, used within the retention
    counter(h, out, "e", "8 days", "another-group");  // idle, but not this group's to prune
    exec(h,
         "INSERT INTO exo_outbox (consumer_group, topic, message_key, value, ordering_key, seq,"
         " created_at) VALUES ('another-group', '" +
             out + "', 'e', 'v', sha256('e'), 1, now() - interval '8 days')");  // theirs too
    sent_last(h);
    ticket(h, "replay-finished", "31 days", false);
    exec(h,
         "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
         " kafka_partition, kafka_offset, outcome) VALUES ('" +
             group + "', 'replay-finished', 1, 't', 0, 0, 'APPLIED')");  // processed again
    ticket(h, "replay-produced", "31 days", true);                       // re-produced a month ago
    ticket(h, "replay-owed", "31 days", false);  // never produced, no row: still owed
    ticket(h, "replay-recent", "29 days", true);
    exec(h,
         "INSERT INTO exo_dead_letters (consumer_group, topic, kafka_partition, kafka_offset,"
         " idempotency_key, letter_sha256, written_at) VALUES ('" +
             group + "', 't', 0, 1, 'letter-old', 'x', now() - interval '31 days'), ('" + group +
             "', 't', 0, 2, 'letter-new', 'x', now() - interval '29 days'), ('another-group',"
             " 't', 0, 1, 'letter-theirs', 'x', now() - interval '31 days')");

    exo::PipelineStats stats;
    RetentionPruner pruner(h.config().retention, h.config().postgres, h.config().outbox.retention,
                           h.config().kafka.group_id, stats);
    CHECK(one_pass(pruner, h) == 10 + 1 + 1 + 1 + 2 + 1);

    CHECK(keys_like(h, "expired") == 0);
    CHECK(keys_like(h, "kept") == 10);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_gaps WHERE idempotency_key IN"
                  " ('gap-new', 'gap-theirs')") == 2);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_gaps WHERE idempotency_key = 'gap-old'") == 0);
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE topic = '" + out + "'") == 3);
    CHECK(h.count("SELECT count(*) FROM exo_outbox_pending WHERE topic = '" + out + "'") == 1);
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE consumer_group = 'another-group'") == 1);
    CHECK(h.count("SELECT count(*) FROM exo_outbox_keys WHERE topic = '" + out +
                  "' AND ordering_key IN (sha256('a'), sha256('b'), sha256('d'), sha256('e'))") ==
          4);
    CHECK(counters(h, out) == 4);
    CHECK(tickets(h, "replay-finished") == 0);
    CHECK(tickets(h, "replay-produced") == 0);
    CHECK(tickets(h, "replay-owed") == 1);
    CHECK(tickets(h, "replay-recent") == 1);
    CHECK(stats.retention.pruned[RetentionStats::processed].load() == 10);
    CHECK(stats.retention.pruned[RetentionStats::sequence_gaps].load() == 1);
    CHECK(stats.retention.pruned[RetentionStats::outbox].load() == 1);
    CHECK(stats.retention.pruned[RetentionStats::outbox_keys].load() == 1);
    CHECK(stats.retention.pruned[RetentionStats::replays].load() == 2);
    CHECK(h.count("SELECT count(*) FROM exo_dead_letters WHERE idempotency_key IN"
                  " ('letter-new', 'letter-theirs')") == 2);
    CHECK(h.count("SELECT count(*) FROM exo_dead_letters WHERE idempotency_key = 'letter-old'") ==
          0);
    CHECK(stats.retention.pruned[RetentionStats::dead_letters].load() == 1);
    for (auto t : {RetentionStats::processed, RetentionStats::sequence_gaps, RetentionStats::outbox,
                   RetentionStats::replays, RetentionStats::dead_letters})
        CHECK(stats.retention.lag_ms[t].load() == 0);
}

TEST_CASE("with outbox retention 0 the key counters of units with no row left are pruned") {
    PipelineHarness h({.name = "prune_keys0", .partitions = 1});
    h.mutable_config().outbox.retention = std::chrono::hours(0);
    const std::string out = "out_" + h.config().kafka.group_id;
    outbox_row(h, out, "pending", 1, "");
    counter(h, out, "pending", "2 hours");  // its unit still has a row
    counter(h, out, "idle", "2 hours");
    counter(h, out, "busy", "5 minutes");       // drawn from just now: kept, it will be again
    outbox_row(h, out, "sent", 1, "1 minute");  // sent: expired at once with retention 0

    exo::PipelineStats stats;
    RetentionPruner pruner(h.config().retention, h.config().postgres, h.config().outbox.retention,
                           h.config().kafka.group_id, stats);
    one_pass(pruner, h);
    CHECK(h.count("SELECT count(*) FROM exo_outbox_keys WHERE topic = '" + out +
                  "' AND ordering_key IN (sha256('pending'), sha256('busy'))") == 2);
    CHECK(counters(h, out) == 2);
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE topic = '" + out + "'") == 1);
    CHECK(h.count("SELECT count(*) FROM exo_outbox_pending") == 1);
}

// Serial (scripts/integration.sh): it watches pg_stat_activity for a lock wait.
TEST_CASE("a key counter a writer holds is never pruned from under the row it is writing" *
          doctest::test_suite("serial")) {
    PipelineHarness h({.name = "prune_race", .partitions = 1});
    h.mutable_config().outbox.retention = std::chrono::hours(0);
    const std::string out = "out_" + h.config().kafka.group_id;
    counter(h, out, "k", "2 hours");  // idle, and its unit has no row

    // A writer that locked the counter in a transaction that started long ago
    // (updated_at stays old) and inserts a row of the unit, not committed yet.
    pqxx::connection w(h.postgres_uri());
    pqxx::work writer(w);
    writer.exec("UPDATE exo_outbox_keys SET last_seq = last_seq + 1 WHERE topic = '" + out + "'");
    writer.exec(
        "INSERT INTO exo_outbox (consumer_group, topic, message_key, value, ordering_key, seq)"
        " VALUES ('" +
        h.config().kafka.group_id + "', '" + out + "', 'k', 'v', sha256('k'), 2)");

    exo::PipelineStats stats;
    RetentionPruner pruner(h.config().retention, h.config().postgres, h.config().outbox.retention,
                           h.config().kafka.group_id, stats);
    auto pass = std::async(std::launch::async, [&] { return one_pass(pruner, h); });
    // The pass either finishes (it skipped the locked counter) or waits for the
    // writer's lock; the writer commits in either case.
    wait_until(
        "the pass to finish or to wait for the writer's lock", 30s,
        [&] {
            return pass.wait_for(0ms) == std::future_status::ready ||
                   h.count(
                       "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                       " AND query LIKE '%exo_outbox_keys%'") > 0;
        },
        [](bool done) { return done; });
    writer.commit();
    pass.get();
    CHECK(counters(h, out) == 1);
    CHECK(h.count("SELECT count(*) FROM exo_outbox WHERE topic = '" + out + "'") == 1);
}

TEST_CASE("a failed pass is retried within seconds, and then prunes") {
    PipelineHarness h({.name = "prune_retry", .partitions = 1});
    auto& config = h.mutable_config();
    config.postgres.lock_timeout = 200ms;
    config.retention.interval = std::chrono::hours(1);  // only a retry can prune in time
    dedup_rows(h, config.kafka.group_id, "expired", 100, "31 days");

    // exo_processed locked whole: every statement of the pass times out.
    pqxx::connection l(h.postgres_uri());
    pqxx::work locker(l);
    locker.exec("LOCK TABLE exo_processed IN ACCESS EXCLUSIVE MODE");
    exo::PipelineStats stats;
    RetentionPruner pruner(h.config().retention, h.config().postgres, h.config().outbox.retention,
                           h.config().kafka.group_id, stats);
    pruner.start();
    wait_until(
        "a pass to fail", 30s, [&] { return stats.retention.failures.load(); },
        [](std::uint64_t n) { return n >= 1; });
    locker.commit();  // (a count here would wait for the lock too)
    wait_until(
        "the retried pass to prune", 30s, [&] { return keys_like(h, "expired"); },
        [](std::int64_t left) { return left == 0; });
    pruner.stop();
}

TEST_CASE("the lag gauge shows how long the oldest expired row has waited, and 0 once pruned") {
    PipelineHarness h({.name = "prune_lag", .partitions = 1});
    h.mutable_config().postgres.dedup_retention = std::chrono::hours(24 * 30);
    dedup_rows(h, h.config().kafka.group_id, "expired", 10, "31 days");

    exo::PipelineStats stats;
    RetentionPruner pruner(h.config().retention, h.config().postgres, h.config().outbox.retention,
                           h.config().kafka.group_id, stats);
    pqxx::connection c(h.postgres_uri());
    std::stop_source stopped;
    stopped.request_stop();  // looks, deletes nothing
    CHECK(pruner.prune_until_caught_up(c, stopped.get_token()) == 0);
    const auto lag = stats.retention.lag_ms[RetentionStats::processed].load();
    CHECK(lag >= 24LL * 3600 * 1000);  // expired a day ago
    CHECK(lag < 2LL * 24 * 3600 * 1000);
    CHECK(stats.retention.lag_ms[RetentionStats::outbox_keys].load() == -1);  // no expiry time
    one_pass(pruner, h);
    CHECK(stats.retention.lag_ms[RetentionStats::processed].load() == 0);
}
