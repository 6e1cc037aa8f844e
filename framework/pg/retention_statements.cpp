#include "pg/retention_statements.hpp"

#include <pqxx/pqxx>

#include <exo/sql_arrays.hpp>

namespace exo {
namespace {

std::int64_t hours(std::chrono::hours h) {
    return static_cast<std::int64_t>(h.count());
}

// The expiry test of a table's timestamp column `ts` against `$N` hours.
std::string expired(const std::string& ts, int hours_param) {
    return ts + " < now() - $" + std::to_string(hours_param) + "::bigint * interval '1 hour'";
}

std::chrono::milliseconds ms_of(const pqxx::field& f) {
    return std::chrono::milliseconds(f.as<std::int64_t>());
}

// How long ago `cutoff` passed the minimum `ts` of `rows` (a FROM ... WHERE
// tail): 0 when nothing there is expired.
std::string lag_of(const std::string& ts, const std::string& cutoff, const std::string& rows) {
    return "(SELECT coalesce(floor(extract(epoch FROM greatest(interval '0', " + cutoff +
           " - min(" + ts + "))) * 1000), 0)::bigint " + rows + ")";
}

// The oldest `limit` rows of `group` in `table` whose `ts` is past the
// retention, through the (consumer_group, ts) index.
std::size_t prune_group_rows(pqxx::transaction_base& tx, const std::string& table,
                             const std::string& ts, const std::string& group,
                             std::chrono::hours retention, int limit) {
    const std::string mine = "consumer_group = $1 AND " + expired(ts, 2);
    const auto r =
        tx.exec_params("DELETE FROM " + table + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " +
                           table + " WHERE " + mine + " ORDER BY " + ts + " LIMIT $3)) AND " + mine,
                       group, hours(retention), limit);
    return r.affected_rows();
}

// The sent rows (no exo_outbox_pending row) written before the cutoff (`$N`
// hours), at most `limit` of each group, oldest first through the
// (consumer_group, created_at) index: `group`'s, then sent rows from before
// rows had a group ('': migration 0007), which any group's pruner may take.
// One ordered scan per group, so neither reads more than the rows it returns
// plus the expired pending ones.
std::string sent_outbox_rows(const std::string& column, int hours_param, const std::string& limit) {
    const auto of = [&](const std::string& group) {
        return "(SELECT " + column + " FROM exo_outbox o WHERE o.consumer_group = " + group +
               " AND " + expired("o.created_at", hours_param) +
               " AND NOT EXISTS (SELECT 1 FROM exo_outbox_pending p"
               " WHERE p.consumer_group = o.consumer_group AND p.id = o.id)"
               " ORDER BY o.created_at LIMIT " +
               limit + ")";
    };
    return of("$1") + " UNION ALL " + of("''");
}
const std::string kDedupCutoff = "now() - $2::bigint * interval '1 hour'";
const std::string kFinishedOrProduced =
    "(r.produced_at IS NOT NULL OR EXISTS (SELECT 1 FROM exo_processed p"
    " WHERE p.consumer_group = r.consumer_group AND p.idempotency_key = r.idempotency_key))";

}  // namespace

std::size_t prune_processed(pqxx::transaction_base& tx, const std::string& group,
                            std::chrono::hours retention, int limit) {
    return prune_group_rows(tx, "exo_processed", "processed_at", group, retention, limit);
}

std::size_t prune_gaps(pqxx::transaction_base& tx, const std::string& group,
                       std::chrono::hours retention, int limit) {
    return prune_group_rows(tx, "exo_sequence_gaps", "first_seen", group, retention, limit);
}

std::size_t prune_outbox(pqxx::transaction_base& tx, const std::string& group,
                         std::chrono::hours retention, int limit) {
    // The outer LIMIT keeps the chunk at `limit` rows over both groups.
    const auto r = tx.exec_params(
        "DELETE FROM exo_outbox x WHERE ctid = ANY(ARRAY(SELECT ctid FROM (" +
            sent_outbox_rows("o.ctid, o.created_at", 2, "$3") +
            ") c ORDER BY created_at LIMIT $3)) AND x.consumer_group IN ($1, '') AND " +
            expired("x.created_at", 2) +
            " AND NOT EXISTS (SELECT 1 FROM exo_outbox_pending p"
            " WHERE p.consumer_group = x.consumer_group AND p.id = x.id)",
        group, hours(retention), limit);
    return r.affected_rows();
}

std::size_t prune_replays(pqxx::transaction_base& tx, const std::string& group,
                          std::chrono::hours retention, int limit) {
    // Tickets are few (one per replayed key): no index on requested_at.
    const auto r = tx.exec_params(
        "DELETE FROM exo_replays r WHERE ctid = ANY(ARRAY(SELECT ctid FROM exo_replays r"
        " WHERE consumer_group = $1 AND " +
            expired("requested_at", 2) + " AND " + kFinishedOrProduced +
            " ORDER BY requested_at LIMIT $3))"
            " AND consumer_group = $1 AND " +
            expired("requested_at", 2) + " AND " + kFinishedOrProduced,
        group, hours(retention), limit);
    return r.affected_rows();
}

std::size_t prune_dead_letters(pqxx::transaction_base& tx, const std::string& group,
                               std::chrono::hours retention, int limit) {
    return prune_group_rows(tx, "exo_dead_letters", "written_at", group, retention, limit);
}

KeySweep prune_outbox_keys(pqxx::transaction_base& tx, const std::string& group,
                           const KeySweep& after, std::chrono::hours idle, int limit) {
    // The unit's pending rows are found through exo_outbox_pending's unit
    // index. Its sent rows need no look: the counter was last drawn from
    // longer than `idle` (at least the retention) ago, in the transaction that
    // wrote the unit's last row, so every row of the unit is expired.
    const std::string no_pending =
        "NOT EXISTS (SELECT 1 FROM exo_outbox_pending o WHERE o.consumer_group = k.consumer_group"
        " AND o.topic = k.topic AND o.ordering_key = k.ordering_key)";
    // The next `limit` counters of the group's sweep, the idle ones among them locked.
    const auto range = tx.exec_params(
        "WITH scan AS (SELECT topic, ordering_key FROM exo_outbox_keys"
        " WHERE consumer_group = $5 AND (topic, ordering_key) > ($1, decode($2, 'hex'))"
        " ORDER BY topic, ordering_key LIMIT $3),"
        " locked AS (SELECT k.topic, k.ordering_key FROM exo_outbox_keys k"
        " JOIN scan USING (topic, ordering_key) WHERE k.consumer_group = $5 AND " +
            expired("k.updated_at", 4) + " AND " + no_pending +
            " FOR UPDATE OF k SKIP LOCKED)"
            " SELECT s.topic, encode(s.ordering_key, 'hex'), l.topic IS NOT NULL FROM scan s"
            " LEFT JOIN locked l USING (topic, ordering_key) ORDER BY s.topic, s.ordering_key",
        after.topic, after.ordering_key_hex, limit, hours(idle), group);
    KeySweep out;
    out.scanned = range.size();
    std::vector<std::string> topics, keys;
    for (const auto& row : range) {
        out.topic = row[0].as<std::string>();
        out.ordering_key_hex = row[1].as<std::string>();
        if (row[2].as<bool>()) {
            topics.push_back(out.topic);
            keys.push_back(out.ordering_key_hex);
        }
    }
    if (topics.empty()) return out;
    const auto r = tx.exec_params(
        "DELETE FROM exo_outbox_keys k USING unnest($1::text[], $2::text[]) AS u(t, h)"
        " WHERE k.consumer_group = $3 AND k.topic = u.t AND k.ordering_key = decode(u.h, 'hex')"
        " AND " +
            no_pending,
        text_array(topics), text_array(keys), group);
    out.deleted = r.affected_rows();
    return out;
}

RetentionLag retention_lag(pqxx::transaction_base& tx, const std::string& group,
                           std::chrono::hours dedup_retention,
                           std::chrono::hours outbox_retention) {
    const auto r = tx.exec_params(
        "SELECT " +
            lag_of("processed_at", kDedupCutoff, "FROM exo_processed WHERE consumer_group = $1") +
            ", " +
            lag_of("first_seen", kDedupCutoff, "FROM exo_sequence_gaps WHERE consumer_group = $1") +
            ", " +
            lag_of("c.created_at", "now() - $3::bigint * interval '1 hour'",
                   "FROM (" + sent_outbox_rows("o.created_at", 3, "1") + ") c") +
            ", " +
            lag_of("requested_at", kDedupCutoff,
                   "FROM exo_replays r WHERE consumer_group = $1 AND " + kFinishedOrProduced) +
            ", " +
            lag_of("written_at", kDedupCutoff, "FROM exo_dead_letters WHERE consumer_group = $1"),
        group, hours(dedup_retention), hours(outbox_retention))[0];
    return {ms_of(r[0]), ms_of(r[1]), ms_of(r[2]), ms_of(r[3]), ms_of(r[4])};
}

}  // namespace exo
