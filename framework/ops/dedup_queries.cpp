#include "ops/dedup_queries.hpp"

#include <pqxx/pqxx>

#include <exo/sql_arrays.hpp>

#include "core/text.hpp"
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

// The process that wrote the dedup row `row`, as text: its exo_processes
// identity, or for a row written before migration 0011 (or by an older exo
// during the upgrade) the text it carried itself (NULL before 0004).
std::string applied_by(const std::string& row) {
    return "coalesce((SELECT x.identity FROM exo_processes x WHERE x.id = " + row +
           ".applied_by_process), " + row + ".applied_by)";
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
        case DeadLetterState::no_dedup_row:
            return "NO_DEDUP_ROW";
        case DeadLetterState::no_key:
            return "NO_KEY";
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
                                ", topic, kafka_partition, kafka_offset, fencing_token, result, " +
                                applied_by("p") +
                                ", fingerprint FROM exo_processed p"
                                " WHERE consumer_group = $1 AND idempotency_key = $2",
                            group, key);
    if (r.empty()) return std::nullopt;
    const auto& row = r[0];
    return DedupRow{row[0].as<std::string>(), row[1].as<std::string>(),  row[2].as<std::string>(),
                    row[3].as<int>(),         row[4].as<std::int64_t>(), row[5].as<std::int64_t>(),
                    optional_text(row[6]),    optional_text(row[7]),     optional_text(row[8])};
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
        iso("processed_at") + " AS at, " + applied_by("p") + ", processed_at AS t" +
        " FROM exo_processed p WHERE consumer_group = $1 AND outcome = 'DEAD_LETTERED'" +
        filters("processed_at") +
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
        " processed_at, " +
            applied_by("moved") +
            ", $3 FROM moved"
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

LetterStates find_letter_states(pqxx::connection& connection, const std::string& group,
                                const std::vector<LetterView>& letters) {
    std::vector<std::string> keys, topics;
    std::vector<int> partitions;
    std::vector<std::int64_t> offsets;
    for (const auto& l : letters) {
        if (l.key) {
            keys.push_back(*l.key);
        } else if (is_postgres_text(l.at.topic)) {
            topics.push_back(l.at.topic);
            partitions.push_back(l.at.partition);
            offsets.push_back(l.at.offset);
        }
    }
    LetterStates states;
    pqxx::read_transaction tx(connection);
    if (!keys.empty()) {
        auto r = tx.exec_params(
            "SELECT u.k, p.outcome, r.topic, r.kafka_partition, r.kafka_offset"
            " FROM (SELECT DISTINCT k FROM unnest($2::text[]) AS k) AS u"
            " LEFT JOIN exo_processed p ON p.consumer_group = $1 AND p.idempotency_key = u.k"
            " LEFT JOIN exo_replays r ON r.consumer_group = $1 AND r.idempotency_key = u.k"
            " WHERE p.idempotency_key IS NOT NULL OR r.idempotency_key IS NOT NULL",
            group, text_array(keys));
        for (const auto& row : r) {
            auto& known = states.keys[row[0].as<std::string>()];
            known.outcome = optional_text(row[1]);
            if (!row[2].is_null())
                known.ticket = OriginalCoordinates{row[2].as<std::string>(), row[3].as<int>(),
                                                   row[4].as<std::int64_t>()};
        }
    }
    if (!topics.empty()) {
        auto r = tx.exec_params(
            "SELECT DISTINCT r.topic, r.kafka_partition, r.kafka_offset FROM exo_replays r"
            " JOIN unnest($2::text[], $3::int[], $4::bigint[]) AS u(t, p, o)"
            " ON r.topic = u.t AND r.kafka_partition = u.p AND r.kafka_offset = u.o"
            " WHERE r.consumer_group = $1",
            group, text_array(topics), int_array(partitions), int_array(offsets));
        for (const auto& row : r)
            states.ticketed.insert(to_text(OriginalCoordinates{
                row[0].as<std::string>(), row[1].as<int>(), row[2].as<std::int64_t>()}));
    }
    return states;
}

bool open_letter_ticket(pqxx::connection& connection, const std::string& group,
                        const std::string& key, const DeadLetterEntry& letter) {
    pqxx::work tx(connection);
    // The NOT EXISTS and the primary key settle every race: a row committed
    // before this statement means the key is decided (nothing to replay); one
    // committed after it makes the replayed copy a duplicate; of two replays at
    // once, the second waits for the first's ticket and then finds its
    // coordinates already there.
    auto r = tx.exec_params(
        "INSERT INTO exo_replays (consumer_group, idempotency_key, topic, kafka_partition,"
        " kafka_offset, reason, dead_lettered_at, dead_lettered_by, requested_by)"
        " SELECT $1, $2, $3, $4, $5, $6,"
        " coalesce(nullif($7::text, '-')::timestamptz, now()), NULL, $8"
        " WHERE NOT EXISTS (SELECT 1 FROM exo_processed WHERE consumer_group = $1"
        " AND idempotency_key = $2)"
        " ON CONFLICT (consumer_group, idempotency_key) DO UPDATE SET topic = EXCLUDED.topic,"
        " kafka_partition = EXCLUDED.kafka_partition, kafka_offset = EXCLUDED.kafka_offset,"
        " reason = EXCLUDED.reason, dead_lettered_at = EXCLUDED.dead_lettered_at,"
        " dead_lettered_by = NULL, requested_at = now(), requested_by = EXCLUDED.requested_by,"
        " produced_at = NULL, produced_to = NULL"
        " WHERE (exo_replays.topic, exo_replays.kafka_partition, exo_replays.kafka_offset)"
        " IS DISTINCT FROM (EXCLUDED.topic, EXCLUDED.kafka_partition, EXCLUDED.kafka_offset)"
        " RETURNING 1",
        group, key, letter.topic, letter.partition, letter.offset, printable_text(letter.reason),
        letter.dead_lettered_at, process_identity());
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
