#include "outbox/outbox_writer.hpp"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <exo/sql_arrays.hpp>
#include "core/text.hpp"

namespace exo {
namespace {

constexpr const char* kWriteOutbox = "exo_outbox_write";

// $1: the emitting group (its relays alone publish the rows).
// m: the records in emit order (n), each with its ordering unit (ok): the
// sha256 of its key, or for a record without a key the emitting session's
// backend pid (4 bytes, never a 32-byte sha256). c: how many per unit. s: each
// unit's last seq after adding its count, its row locked until the transaction
// ends (sorted: one global lock order). The records of a unit then take the
// seqs s - c + 1 .. s in emit order. Keys and values travel as hex (bytea: any
// bytes pass).
//
// A session runs one transaction at a time, so no two open transactions ever
// hold the same keyless unit: keyless emits never wait for each other, where
// one counter row per (group, topic) made every emitting transaction wait for
// the one before it to commit. And no NOTIFY: PostgreSQL takes one
// database-wide lock for a transaction that notified and holds it through the
// commit's WAL flush, so every emitting commit waited for the previous one's
// flush. The committer rings its relay's doorbell instead (outbox_doorbell.hpp).
// The table's statement trigger gives each row its exo_outbox_pending row in
// this statement: committed, it is pending at once (sql/0010_exo_outbox_lean.sql).
constexpr const char* kWriteOutboxSql =
    "WITH m AS (SELECT u.n, u.t, CASE WHEN u.hk THEN decode(u.k, 'hex') END AS k,"
    " decode(u.v, 'hex') AS v, u.h::jsonb AS h,"
    " CASE WHEN u.hk THEN sha256(decode(u.k, 'hex')) ELSE int4send(pg_backend_pid()) END AS ok"
    " FROM unnest($2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[])"
    " WITH ORDINALITY AS u(t, hk, k, v, h, n)),"
    " c AS (SELECT t, ok, count(*) AS c FROM m GROUP BY t, ok),"
    " s AS (INSERT INTO exo_outbox_keys AS x (consumer_group, topic, ordering_key, last_seq)"
    " SELECT $1, t, ok, c FROM c ORDER BY t, ok"
    " ON CONFLICT (consumer_group, topic, ordering_key) DO UPDATE"
    " SET last_seq = x.last_seq + EXCLUDED.last_seq, updated_at = now()"
    " RETURNING topic, ordering_key, last_seq),"
    " ins AS (INSERT INTO exo_outbox"
    " (consumer_group, topic, message_key, value, headers, ordering_key, seq)"
    " SELECT $1, m.t, m.k, m.v, m.h, m.ok,"
    " s.last_seq - c.c + row_number() OVER (PARTITION BY m.t, m.ok ORDER BY m.n)"
    " FROM m JOIN c ON c.t = m.t AND c.ok = m.ok"
    " JOIN s ON s.topic = m.t AND s.ordering_key = m.ok ORDER BY m.n RETURNING 1)"
    " SELECT count(*) FROM ins";

std::string headers_json(const std::vector<RecordHeader>& headers) {
    auto out = nlohmann::json::array();
    for (const auto& h : headers)
        out.push_back(
            {{"name", h.name}, {"value", h.value ? nlohmann::json(hex_bytes(*h.value)) : nullptr}});
    return out.dump();
}

}  // namespace

void prepare_outbox_statements(pqxx::connection_base& connection) {
    connection.prepare(kWriteOutbox, kWriteOutboxSql);
}

void write_outbox(pqxx::transaction_base& tx, const std::string& group,
                  std::span<const OutboxMessage> messages) {
    if (messages.empty()) return;
    std::vector<std::string> topics, keys, values, headers;
    std::string has_key = "{";
    for (const auto& m : messages) {
        topics.push_back(m.topic);
        has_key += std::string(has_key.size() > 1 ? "," : "") + (m.key ? "t" : "f");
        keys.push_back(m.key ? hex_bytes(*m.key) : std::string());
        values.push_back(hex_bytes(m.value));
        headers.push_back(headers_json(m.headers));
    }
    has_key += "}";
    tx.exec_prepared(kWriteOutbox, group, text_array(topics), has_key, text_array(keys),
                     text_array(values), text_array(headers));
}

void notify_outbox_relays(pqxx::transaction_base& tx) {
    tx.exec(std::string("NOTIFY ") + kOutboxChannel);
}

}  // namespace exo
