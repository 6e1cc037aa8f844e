#include "ops/dedup_queries.hpp"

#include <pqxx/pqxx>

#include "pg/process_identity.hpp"

namespace exo {
namespace {

// One text form for every time the commands print: ISO 8601, UTC, milliseconds.
std::string iso(const std::string& column) {
    return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
}

std::optional<std::string> optional_text(const pqxx::field& f) {
    if (f.is_null()) return std::nullopt;
    return f.as<std::string>();
}

// Filters shared by both halves of the list; $2.. are sentinels, not NULLs, so
// each parameter has one type: '' any topic, -1 any partition / offset / age.
std::string filters(const std::string& time_column) {
    return " AND ($2::text = '' OR topic = $2::text)"
           " AND ($3::int < 0 OR kafka_partition = $3::int)"
           " AND ($4::bigint < 0 OR kafka_offset = $4::bigint)"
           " AND ($5::bigint < 0 OR " +
           time_column + " >= now() - $5::bigint * interval '1 millisecond')";
}

}  // namespace

const char* to_string(DeadLetterState state) {
    switch (state) {
        case DeadLetterState::dead_lettered:
            return "DEAD_LETTERED";
        case DeadLetterState::replay_pending:
            return "REPLAY_PENDING";
        case DeadLetterState::replay_sent:
            return "REPLAY_SENT";
    }
    return "DEAD_LETTERED";
}

const char* to_string(ReplayResult::Status status) {
    switch (status) {
        case ReplayResult::Status::replayed:
            return "replayed";
        case ReplayResult::Status::would_replay:
            return "would replay";
        case ReplayResult::Status::skipped:
            return "skipped";
    }
    return "skipped";
}

std::optional<DedupRow> find_dedup_row(pqxx::connection& connection, const std::string& group,
                                       const std::string& key) {
    pqxx::read_transaction tx(connection);
    auto r = tx.exec_params("SELECT outcome, " + iso("processed_at") +
                                ", topic, kafka_partition, kafka_offset, fencing_token, result,"
                                " applied_by FROM exo_processed"
                                " WHERE consumer_group = $1 AND idempotency_key = $2",
                            group, key);
    if (r.empty()) return std::nullopt;
    const auto& row = r[0];
    return DedupRow{row[0].as<std::string>(), row[1].as<std::string>(),  row[2].as<std::string>(),
                    row[3].as<int>(),         row[4].as<std::int64_t>(), row[5].as<std::int64_t>(),
                    optional_text(row[6]),    optional_text(row[7])};
}

std::optional<ReplayTicket> find_replay_ticket(pqxx::connection& connection,
                                               const std::string& group, const std::string& key) {
    pqxx::read_transaction tx(connection);
    auto r = tx.exec_params(
        "SELECT r.topic, r.kafka_partition, r.kafka_offset, coalesce(r.reason, ''), " +
            iso("r.dead_lettered_at") + ", " + iso("r.requested_at") + ", " + iso("r.produced_at") +
            ", r.produced_to, p.outcome FROM exo_replays r LEFT JOIN exo_processed p"
            " USING (consumer_group, idempotency_key)"
            " WHERE r.consumer_group = $1 AND r.idempotency_key = $2",
        group, key);
    if (r.empty()) return std::nullopt;
    const auto& row = r[0];
    return ReplayTicket{
        row[0].as<std::string>(), row[1].as<int>(),         row[2].as<std::int64_t>(),
        row[3].as<std::string>(), row[4].as<std::string>(), row[5].as<std::string>(),
        optional_text(row[6]),    optional_text(row[7]),    optional_text(row[8])};
}

std::optional<std::int64_t> find_last_sequence(pqxx::connection& connection,
                                               const std::string& handler,
                                               const std::string& entity) {
    pqxx::read_transaction tx(connection);
    auto r =
        tx.exec_params("SELECT last_sequence FROM exo_sequences WHERE handler = $1 AND entity = $2",
                       handler, entity);
    if (r.empty()) return std::nullopt;
    return r[0][0].as<std::int64_t>();
}

std::vector<DeadLetterEntry> list_dead_letters(pqxx::connection& connection,
                                               const std::string& group,
                                               const DeadLetterSelection& s) {
    pqxx::read_transaction tx(connection);
    const std::string sql =
        "SELECT idempotency_key, 0 AS state, topic, kafka_partition, kafka_offset,"
        " coalesce(result, ''), " +
        iso("processed_at") + " AS at, applied_by, processed_at AS t FROM exo_processed" +
        " WHERE consumer_group = $1 AND outcome = 'DEAD_LETTERED'" + filters("processed_at") +
        " UNION ALL SELECT idempotency_key, CASE WHEN produced_at IS NULL THEN 1 ELSE 2 END,"
        " topic, kafka_partition, kafka_offset, coalesce(reason, ''), " +
        iso("dead_lettered_at") +
        ", dead_lettered_by, dead_lettered_at FROM exo_replays r WHERE consumer_group = $1"
        " AND NOT EXISTS (SELECT 1 FROM exo_processed p WHERE p.consumer_group = r.consumer_group"
        " AND p.idempotency_key = r.idempotency_key)" +
        filters("dead_lettered_at") + " ORDER BY t, idempotency_key";
    auto r = tx.exec_params(sql, group, s.topic.value_or(""), s.partition.value_or(-1),
                            s.offset.value_or(-1),
                            s.since ? static_cast<std::int64_t>(s.since->count()) : -1);
    std::vector<DeadLetterEntry> out;
    for (const auto& row : r)
        out.push_back({row[0].as<std::string>(), static_cast<DeadLetterState>(row[1].as<int>()),
                       row[2].as<std::string>(), row[3].as<int>(), row[4].as<std::int64_t>(),
                       row[5].as<std::string>(), row[6].as<std::string>(), optional_text(row[7])});
    return out;
}

bool open_replay_ticket(pqxx::connection& connection, const std::string& group,
                        const std::string& key) {
    pqxx::work tx(connection);
    auto r = tx.exec_params(
        "WITH moved AS (DELETE FROM exo_processed WHERE consumer_group = $1"
        " AND idempotency_key = $2 AND outcome = 'DEAD_LETTERED' RETURNING *)"
        " INSERT INTO exo_replays (consumer_group, idempotency_key, topic, kafka_partition,"
        " kafka_offset, reason, dead_lettered_at, dead_lettered_by, requested_by)"
        " SELECT consumer_group, idempotency_key, topic, kafka_partition, kafka_offset, result,"
        " processed_at, applied_by, $3 FROM moved"
        " ON CONFLICT (consumer_group, idempotency_key) DO UPDATE SET topic = EXCLUDED.topic,"
        " kafka_partition = EXCLUDED.kafka_partition, kafka_offset = EXCLUDED.kafka_offset,"
        " reason = EXCLUDED.reason, dead_lettered_at = EXCLUDED.dead_lettered_at,"
        " dead_lettered_by = EXCLUDED.dead_lettered_by, requested_at = now(),"
        " requested_by = EXCLUDED.requested_by, produced_at = NULL, produced_to = NULL"
        " RETURNING 1",
        group, key, process_identity());
    tx.commit();
    return !r.empty();
}

void mark_replay_produced(pqxx::connection& connection, const std::string& group,
                          const std::string& key, const std::string& produced_to) {
    pqxx::work tx(connection);
    tx.exec_params(
        "UPDATE exo_replays SET produced_at = now(), produced_to = $3"
        " WHERE consumer_group = $1 AND idempotency_key = $2",
        group, key, produced_to);
    tx.commit();
}

}  // namespace exo
