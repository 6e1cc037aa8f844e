#include "outbox/outbox_admin.hpp"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <exo/outbox.hpp>
#include "core/text.hpp"
#include "outbox/outbox_writer.hpp"

namespace exo {
namespace {

// The columns of OutboxProblemRow from exo_outbox o (and exo_outbox_units f,
// possibly absent).
constexpr const char* kColumns =
    "o.id, o.consumer_group, o.topic, o.message_key, o.message_id::text, octet_length(o.value),"
    " (SELECT count(*) FROM exo_outbox_pending w WHERE w.consumer_group = o.consumer_group"
    " AND w.topic = o.topic AND w.ordering_key = o.ordering_key AND w.seq > o.seq),"
    " coalesce(f.failures, 0), coalesce(f.reason, ''),"
    " coalesce(to_char(f.first_failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "''),"
    " coalesce(to_char(f.next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "'')";

OutboxProblemRow problem_of(const pqxx::row& r) {
    OutboxProblemRow p;
    p.id = r[0].as<std::int64_t>();
    p.group = r[1].as<std::string>();
    p.topic = r[2].as<std::string>();
    if (!r[3].is_null()) p.key = printable_text(pqxx::binarystring(r[3]).str(), 300);
    p.message_id = r[4].as<std::string>();
    p.value_bytes = r[5].as<std::int64_t>();
    p.waiting_behind = r[6].as<std::int64_t>();
    p.failures = r[7].as<int>();
    p.reason = r[8].as<std::string>();
    p.first_failed_at = r[9].as<std::string>();
    p.next_attempt_at = r[10].as<std::string>();
    return p;
}

// A pending row is found by its primary key (group, id): the group is its
// exo_outbox row's (sql/0016_exo_outbox_pending_key.sql).
constexpr const char* kPendingById =
    "FROM exo_outbox_pending p WHERE p.consumer_group ="
    " (SELECT o.consumer_group FROM exo_outbox o WHERE o.id = $1) AND p.id = $1";

// Locks pending row `id` if it may be taken out (see discard_outbox_row) and
// returns it with its message, or throws OutboxAdminRefused.
std::pair<OutboxProblemRow, OutboxMessage> take_head(pqxx::transaction_base& tx,
                                                     const std::string& group, std::int64_t id) {
    bool pending = false;
    try {
        // The relay locks a head's pending row; NOWAIT: a relay holding it is
        // publishing the row right now.
        pending =
            !tx.exec_params(std::string("SELECT 1 ") + kPendingById + " FOR UPDATE NOWAIT", id)
                 .empty();
    } catch (const pqxx::sql_error& e) {
        if (e.sqlstate() != "55P03") throw;
        throw OutboxAdminRefused("outbox row " + std::to_string(id) +
                                 " is being published by a relay right now: look again with "
                                 "`exo outbox list` in a few seconds");
    }
    const auto r = tx.exec_params(
        "SELECT o.consumer_group, o.topic, o.message_key, o.value, o.headers::text"
        " FROM exo_outbox o WHERE o.id = $1",
        id);
    if (r.empty()) throw OutboxAdminRefused("there is no outbox row " + std::to_string(id));
    const auto row_group = r[0][0].as<std::string>();
    if (!pending)
        throw OutboxAdminRefused("outbox row " + std::to_string(id) + " was already published");
    if (row_group != group && !row_group.empty())
        throw OutboxAdminRefused("outbox row " + std::to_string(id) + " belongs to group '" +
                                 row_group + "', not '" + group + "': use that group's config");
    const auto earlier = tx.exec_params(
        "SELECT min(w.id) FROM exo_outbox_pending o JOIN exo_outbox_pending w"
        " ON w.consumer_group = o.consumer_group AND w.topic = o.topic"
        " AND w.ordering_key = o.ordering_key AND w.seq < o.seq WHERE o.id = $1"
        " AND o.consumer_group = (SELECT x.consumer_group FROM exo_outbox x WHERE x.id = $1)",
        id);
    if (!earlier[0][0].is_null())
        throw OutboxAdminRefused("outbox row " + std::to_string(id) + " waits behind row " +
                                 earlier[0][0].as<std::string>() +
                                 " of its key: only a key's first pending row can be taken out, "
                                 "or the key's order would break");
    const auto full = tx.exec_params(
        std::string("SELECT ") + kColumns +
            " FROM exo_outbox o LEFT JOIN exo_outbox_units f ON f.consumer_group ="
            " o.consumer_group AND f.topic = o.topic AND f.ordering_key = o.ordering_key"
            " WHERE o.id = $1",
        id);
    OutboxMessage message{
        r[0][1].as<std::string>(), std::nullopt, pqxx::binarystring(r[0][3]).str(), {}};
    if (!r[0][2].is_null()) message.key = pqxx::binarystring(r[0][2]).str();
    for (const auto& h : nlohmann::json::parse(r[0][4].as<std::string>())) {
        RecordHeader header{h.at("name").get<std::string>(), std::nullopt};
        if (!h.at("value").is_null())
            header.value = bytes_of_hex(h.at("value").get<std::string>()).value_or("");
        message.headers.push_back(std::move(header));
    }
    return {problem_of(full[0]), std::move(message)};
}

// Deletes the row, its pending row and its unit's failure record: the unit's
// next row goes next.
void remove_head(pqxx::transaction_base& tx, std::int64_t id) {
    tx.exec_params(std::string("WITH p AS (DELETE ") + kPendingById +
                       "), gone AS (DELETE FROM exo_outbox WHERE id = $1"
                       " RETURNING consumer_group, topic, ordering_key)"
                       " DELETE FROM exo_outbox_units f USING gone"
                       " WHERE f.consumer_group = gone.consumer_group"
                       " AND f.topic = gone.topic AND f.ordering_key = gone.ordering_key",
                   id);
}

}  // namespace

std::vector<OutboxProblemRow> list_outbox_problems(pqxx::connection& pg, const std::string& group,
                                                   int limit) {
    pqxx::read_transaction tx(pg);
    std::vector<OutboxProblemRow> out;
    // Each parked unit's head: its lowest pending seq.
    const auto parked = tx.exec_params(
        std::string("SELECT ") + kColumns +
            " FROM exo_outbox_units f CROSS JOIN LATERAL (SELECT x.id FROM exo_outbox_pending x"
            " WHERE x.consumer_group = f.consumer_group AND x.topic = f.topic"
            " AND x.ordering_key = f.ordering_key ORDER BY x.seq LIMIT 1) h"
            " JOIN exo_outbox o ON o.id = h.id"
            " WHERE f.consumer_group = $1 ORDER BY f.first_failed_at, o.id LIMIT $2",
        group, limit);
    for (const auto& r : parked) out.push_back(problem_of(r));
    // Rows from before rows had a group that no relay publishes: the heads.
    const auto unassigned = tx.exec_params(
        std::string("SELECT ") + kColumns +
            " FROM exo_outbox_pending h JOIN exo_outbox o ON o.id = h.id"
            " LEFT JOIN exo_outbox_units f ON false"
            " WHERE h.consumer_group = '' AND NOT EXISTS (SELECT 1"
            " FROM exo_outbox_pending w WHERE w.consumer_group = '' AND w.topic = h.topic"
            " AND w.ordering_key = h.ordering_key AND w.seq < h.seq)"
            " ORDER BY o.id LIMIT $1",
        limit);
    for (const auto& r : unassigned) {
        out.push_back(problem_of(r));
        out.back().reason =
            "written before outbox rows had a consumer group: no relay publishes it";
    }
    return out;
}

OutboxProblemRow discard_outbox_row(pqxx::connection& pg, const std::string& group,
                                    std::int64_t id) {
    pqxx::work tx(pg);
    auto [row, message] = take_head(tx, group, id);
    remove_head(tx, id);
    tx.commit();
    return row;
}

OutboxProblemRow reroute_outbox_row(pqxx::connection& pg, const std::string& group, std::int64_t id,
                                    const std::string& topic, std::size_t max_message_bytes) {
    prepare_outbox_statements(pg);
    pqxx::work tx(pg);
    auto [row, message] = take_head(tx, group, id);
    message.topic = topic;
    if (auto problem = outbox_message_problem(message, max_message_bytes))
        throw OutboxAdminRefused("outbox row " + std::to_string(id) + " cannot go to '" +
                                 printable_text(topic, 300) + "': " + *problem);
    remove_head(tx, id);
    write_outbox(tx, group, {&message, 1});
    notify_outbox_relays(tx);  // the relays publish it at once, not at their next poll
    tx.commit();
    return row;
}

}  // namespace exo
