#include "outbox/outbox_rows.hpp"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <stdexcept>

#include <exo/sql_arrays.hpp>
#include "core/text.hpp"

namespace exo {
namespace {

// heads: the pending rows with no earlier pending row of their unit, oldest
// first, locked; a head another relay holds is skipped (SKIP LOCKED), and a
// head that another relay marked sent after this statement's snapshot fails the
// re-check of `sent_at IS NULL` when its lock is granted, so it is skipped too.
// Then each head's unit: its pending rows from the head on, in seq order,
// taken round-robin over the units (every head, then every second row...), so
// no head stays locked without being published.
// Not prepared: it runs once per round, and a custom plan sees the LIMIT.
constexpr const char* kClaimSql =
    "WITH heads AS (SELECT o.id, o.topic, o.ordering_key, o.seq FROM exo_outbox o"
    " WHERE o.sent_at IS NULL AND NOT EXISTS (SELECT 1 FROM exo_outbox p"
    " WHERE p.sent_at IS NULL AND p.topic = o.topic AND p.ordering_key = o.ordering_key"
    " AND p.seq < o.seq)"
    " ORDER BY o.id LIMIT $1 FOR UPDATE OF o SKIP LOCKED)"
    " SELECT r.id, r.message_id::text, r.topic, r.message_key IS NOT NULL,"
    " encode(coalesce(r.message_key, ''::bytea), 'hex'), encode(r.value, 'hex'),"
    " r.headers::text, encode(r.ordering_key, 'hex'), r.seq"
    " FROM heads h CROSS JOIN LATERAL (SELECT x.*, row_number() OVER (ORDER BY x.seq) AS rank"
    " FROM exo_outbox x WHERE x.sent_at IS NULL AND x.topic = h.topic"
    " AND x.ordering_key = h.ordering_key AND x.seq >= h.seq ORDER BY x.seq LIMIT $1) r"
    " ORDER BY r.rank, h.id LIMIT $1";

std::string bytes_from(const pqxx::field& hex) {
    auto bytes = bytes_of_hex(hex.c_str());
    if (!bytes) throw std::runtime_error("exo_outbox: PostgreSQL returned malformed hex");
    return std::move(*bytes);
}

std::vector<RecordHeader> headers_from(const std::string& json) {
    std::vector<RecordHeader> out;
    for (const auto& h : nlohmann::json::parse(json)) {
        RecordHeader header{h.at("name").get<std::string>(), std::nullopt};
        if (!h.at("value").is_null()) {
            auto value = bytes_of_hex(h.at("value").get<std::string>());
            if (!value) throw std::runtime_error("exo_outbox: a header value is malformed hex");
            header.value = std::move(*value);
        }
        out.push_back(std::move(header));
    }
    return out;
}

}  // namespace

std::vector<OutboxRow> claim_outbox_rows(pqxx::transaction_base& tx, int limit) {
    std::vector<OutboxRow> rows;
    for (const auto& r : tx.exec_params(kClaimSql, limit)) {
        OutboxRow row;
        row.id = r[0].as<std::int64_t>();
        row.message_id = r[1].as<std::string>();
        row.topic = r[2].as<std::string>();
        if (r[3].as<bool>()) row.key = bytes_from(r[4]);
        row.value = bytes_from(r[5]);
        row.headers = headers_from(r[6].as<std::string>());
        row.ordering_key = r[7].as<std::string>();
        row.seq = r[8].as<std::int64_t>();
        rows.push_back(std::move(row));
    }
    return rows;
}

void mark_outbox_sent(pqxx::transaction_base& tx, const std::vector<std::int64_t>& ids, bool keep) {
    if (ids.empty()) return;
    tx.exec_params(keep ? "UPDATE exo_outbox SET sent_at = now() WHERE id = ANY($1::bigint[])"
                        : "DELETE FROM exo_outbox WHERE id = ANY($1::bigint[])",
                   int_array(ids));
}

OutboxBacklog outbox_backlog(pqxx::transaction_base& tx) {
    const auto r = tx.exec(
        "SELECT count(*), coalesce(floor(extract(epoch FROM now() - min(created_at)) * 1000),"
        " 0)::bigint FROM exo_outbox WHERE sent_at IS NULL")[0];
    return {r[0].as<std::int64_t>(), std::chrono::milliseconds(r[1].as<std::int64_t>())};
}

}  // namespace exo
