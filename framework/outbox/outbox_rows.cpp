#include "outbox/outbox_rows.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <stdexcept>

#include <exo/sql_arrays.hpp>
#include "core/text.hpp"

namespace exo {
namespace {

// The skip scan over a group's pending units: from the unit after ($2, $3),
// each step one descent of exo_outbox_pending_unit (the unit index of
// exo_outbox_pending, sql/0010_exo_outbox_lean.sql) to the next (topic,
// ordering_key) of group $1. The row comparison covers (topic, ordering_key)
// only, after the equality on the group: written over all three columns
// beside that equality, btree starts at the group's first entry and walks
// every pending row before the next unit (35 ms a step at 400,000 rows).
// Laterals (nested loops) all the way, so the LIMIT of the caller stops the
// recursion as soon as it has enough units.
constexpr const char* kPendingUnits =
    "WITH RECURSIVE u AS ((SELECT o.topic, o.ordering_key FROM exo_outbox_pending o"
    " WHERE o.consumer_group = $1 AND (o.topic, o.ordering_key) > ($2, decode($3, 'hex'))"
    " ORDER BY o.consumer_group, o.topic, o.ordering_key LIMIT 1)"
    " UNION ALL SELECT n.topic, n.ordering_key FROM u CROSS JOIN LATERAL"
    " (SELECT o.topic, o.ordering_key FROM exo_outbox_pending o"
    " WHERE o.consumer_group = $1 AND (o.topic, o.ordering_key) > (u.topic, u.ordering_key)"
    " ORDER BY o.consumer_group, o.topic, o.ordering_key LIMIT 1) n)";
// A unit's first (h) and last (t) pending row.
constexpr const char* kUnitHead =
    " CROSS JOIN LATERAL (SELECT x.id, x.seq FROM exo_outbox_pending x"
    " WHERE x.consumer_group = $1 AND x.topic = u.topic AND x.ordering_key = u.ordering_key"
    " ORDER BY x.seq LIMIT 1) h";
constexpr const char* kUnitTail =
    " CROSS JOIN LATERAL (SELECT x.seq FROM exo_outbox_pending x"
    " WHERE x.consumer_group = $1 AND x.topic = u.topic AND x.ordering_key = u.ordering_key"
    " ORDER BY x.seq DESC LIMIT 1) t";

// The units with a head, not parked until later, and their failures so far,
// in key order. OFFSET 0 keeps the parked-unit lookup a lateral subquery: pulled
// up into a plain join, PostgreSQL hashes it against the whole skip scan,
// which then reads every pending unit and returns them in hash order.
const std::string kUnitsSql =
    std::string(kPendingUnits) + " SELECT u.topic, encode(u.ordering_key, 'hex'), h.id," +
    " coalesce(p.failures, 0) FROM u" + kUnitHead +
    " LEFT JOIN LATERAL (SELECT f.failures, f.next_attempt_at FROM exo_outbox_units f"
    " WHERE f.consumer_group = $1 AND f.topic = u.topic AND f.ordering_key = u.ordering_key"
    " OFFSET 0) p ON true WHERE p.next_attempt_at IS NULL OR p.next_attempt_at <= now() LIMIT $4";

const std::string kBacklogSql =
    std::string(kPendingUnits) + " SELECT coalesce(sum(t.seq - h.seq + 1), 0)::bigint," +
    " coalesce(floor(extract(epoch FROM now() - min(r.created_at)) * 1000), 0)::bigint," +
    " (SELECT count(*) FROM exo_outbox_units f WHERE f.consumer_group = $1 AND EXISTS"
    " (SELECT 1 FROM exo_outbox_pending x WHERE x.consumer_group = $1 AND x.topic = f.topic"
    " AND x.ordering_key = f.ordering_key)) FROM u" +
    kUnitHead + kUnitTail + " JOIN exo_outbox r ON r.id = h.id";

// Locks the heads' pending rows: another relay's head is skipped, and one
// another relay marked or the operator removed since the units were read is
// gone and left out. Pending rows are found by (group, id), the table's primary
// key (sql/0016_exo_outbox_pending_key.sql).
constexpr const char* kLockSql =
    "SELECT id FROM exo_outbox_pending WHERE consumer_group = $2 AND id = ANY($1::bigint[])"
    " FOR UPDATE SKIP LOCKED";

// The pending rows behind each locked head, sizes only: the values are read for
// the chosen rows alone.
constexpr const char* kRowsSql =
    "SELECT h.id, r.id, octet_length(o.value) + coalesce(octet_length(o.message_key), 0)"
    " + octet_length(o.headers::text) FROM exo_outbox_pending h CROSS JOIN LATERAL"
    " (SELECT x.id, x.seq FROM exo_outbox_pending x"
    " WHERE x.consumer_group = $1 AND x.topic = h.topic AND x.ordering_key = h.ordering_key"
    " AND x.seq >= h.seq ORDER BY x.seq LIMIT $3) r JOIN exo_outbox o ON o.id = r.id"
    " WHERE h.consumer_group = $1 AND h.id = ANY($2::bigint[]) ORDER BY h.id, r.seq";

// Whether the group has a unit with a failure not yet overcome: then a round
// must leave parked units out, which the skip scan does.
constexpr const char* kAnyFailedUnitSql =
    "SELECT EXISTS (SELECT 1 FROM exo_outbox_units WHERE consumer_group = $1)";

// The group's oldest pending rows in id order that no other relay holds,
// locked, with their units and sizes: a range of the primary key (group, id). Within a unit, id
// order is seq order: a unit's rows get their ids after its exo_outbox_keys row is locked
// (outbox_writer.cpp), so a later transaction's rows of a unit have larger ids
// than an earlier one's. A row another relay (or `exo outbox`) holds is
// stepped over (SKIP LOCKED); the rows of its unit behind it are then left out
// by kOvertakingSql.
//
// Each row's size is one probe of exo_outbox's primary key (a subquery per
// row, NULL for a pending row whose exo_outbox row was deleted by hand). As a
// join, PostgreSQL chose a merge join when its statistics saw many pending
// rows: it walked exo_outbox's primary key from its first row, every sent row
// kept for retention, up to the pending ones, each round (120,499 rows read
// for 500 claimed, 105 ms, against 8 ms).
constexpr const char* kOldestRowsSql =
    "SELECT p.id, p.topic, encode(p.ordering_key, 'hex'), p.seq,"
    " (SELECT octet_length(o.value) + coalesce(octet_length(o.message_key), 0)"
    " + octet_length(o.headers::text) FROM exo_outbox o WHERE o.id = p.id)"
    " FROM exo_outbox_pending p WHERE p.consumer_group = $1 ORDER BY p.id LIMIT $2"
    " FOR UPDATE SKIP LOCKED";

// Of the claimed units ($2 topics, $3 ordering keys in hex, $4 the lowest seq
// claimed of each), those with an earlier pending row: one that SKIP LOCKED
// stepped over, held by another relay. One descent of the unit index each. A
// pending row of a unit is never invisible here while a later one is visible:
// a unit's rows commit in seq order.
constexpr const char* kOvertakingSql =
    "SELECT u.t, u.k FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(t, k, s)"
    " WHERE EXISTS (SELECT 1 FROM exo_outbox_pending x WHERE x.consumer_group = $1"
    " AND x.topic = u.t AND x.ordering_key = decode(u.k, 'hex') AND x.seq < u.s)";

constexpr const char* kValuesSql =
    "SELECT id, message_id::text, topic, message_key, value, headers::text,"
    " encode(ordering_key, 'hex'), seq FROM exo_outbox WHERE id = ANY($1::bigint[])";

std::string bytes_of(const pqxx::field& field) {
    const pqxx::binarystring bytes(field);
    return bytes.str();
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

struct Candidate {
    OutboxUnit unit;
    std::int64_t head = 0;
    int failures = 0;
};

// Up to `limit` units with their heads locked: pages of pending units after
// `cursor`, then from the start (each unit once), until enough were locked or
// every pending unit was tried. A unit another relay holds costs one row of a
// page, so relays that share a group spread over its units.
std::vector<Candidate> lock_units(pqxx::transaction_base& tx, const std::string& group,
                                  const OutboxUnit& cursor, int limit) {
    std::vector<Candidate> locked;
    std::set<OutboxUnit> seen;
    const OutboxUnit start{};
    OutboxUnit from = cursor;
    bool wrapped = cursor == start;
    while (static_cast<int>(locked.size()) < limit) {
        // Only as many as are missing: a head locked and not taken would keep
        // other relays off its unit for nothing.
        const int want = limit - static_cast<int>(locked.size());
        const auto rows = tx.exec_params(kUnitsSql, group, from.topic, from.ordering_key, want);
        std::vector<Candidate> page;
        for (const auto& r : rows) {
            Candidate c{{r[0].as<std::string>(), r[1].as<std::string>()},
                        r[2].as<std::int64_t>(),
                        r[3].as<int>()};
            from = c.unit;
            if (seen.insert(c.unit).second) page.push_back(std::move(c));
        }
        if (!rows.empty() && page.empty()) break;  // came around to units tried already
        if (!page.empty()) {
            std::vector<std::int64_t> heads;
            heads.reserve(page.size());
            for (const auto& c : page) heads.push_back(c.head);
            std::set<std::int64_t> got;
            for (const auto& r : tx.exec_params(kLockSql, int_array(heads), group))
                got.insert(r[0].as<std::int64_t>());
            for (auto& c : page)
                if (got.contains(c.head)) locked.push_back(std::move(c));
        }
        if (static_cast<int>(rows.size()) < want) {  // the scan reached the last unit
            if (wrapped) break;
            wrapped = true;
            from = start;
        }
    }
    return locked;
}

// The rows `chosen` (ids) with their values, in that order.
std::vector<OutboxRow> read_rows(pqxx::transaction_base& tx,
                                 const std::vector<std::int64_t>& chosen) {
    std::map<std::int64_t, OutboxRow> by_id;
    for (const auto& r : tx.exec_params(kValuesSql, int_array(chosen))) {
        OutboxRow row;
        row.id = r[0].as<std::int64_t>();
        row.message_id = r[1].as<std::string>();
        row.topic = r[2].as<std::string>();
        if (!r[3].is_null()) row.key = bytes_of(r[3]);
        row.value = bytes_of(r[4]);
        row.headers = headers_from(r[5].as<std::string>());
        row.ordering_key = r[6].as<std::string>();
        row.seq = r[7].as<std::int64_t>();
        by_id.emplace(row.id, std::move(row));
    }
    std::vector<OutboxRow> rows;
    rows.reserve(chosen.size());
    for (const auto id : chosen) rows.push_back(std::move(by_id.at(id)));
    return rows;
}

// No unit of the group is parked: its oldest pending rows no other relay holds,
// in id order, less the units whose earlier row another relay holds, within the
// bounds (a prefix: the first row that does not fit ends the round's rows, so
// no unit's later row goes before it).
OutboxClaim claim_oldest_rows(pqxx::transaction_base& tx, const std::string& group,
                              const OutboxClaimLimits& limits) {
    struct Oldest {
        std::int64_t id;
        OutboxUnit unit;
        std::size_t size;
    };
    std::vector<Oldest> oldest;
    std::map<OutboxUnit, std::int64_t> first_seq;  // of each unit, the lowest claimed
    // A unit's pending rows have consecutive seqs (rows leave a unit only from
    // its head), so a gap in the seqs claimed is a row SKIP LOCKED stepped
    // over, another relay's: the unit's rows after the gap are left out.
    std::map<OutboxUnit, std::int64_t> last_seq;
    std::set<OutboxUnit> gapped;
    for (const auto& r : tx.exec_params(kOldestRowsSql, group, limits.rows)) {
        // No exo_outbox row (deleted by hand): never published, and its unit's
        // later rows wait behind it (a gap, or an earlier pending row).
        if (r[4].is_null()) continue;
        Oldest row{r[0].as<std::int64_t>(),
                   {r[1].as<std::string>(), r[2].as<std::string>()},
                   r[4].as<std::size_t>()};
        const auto seq = r[3].as<std::int64_t>();
        if (gapped.contains(row.unit)) continue;
        const auto last = last_seq.find(row.unit);
        if (last != last_seq.end() && seq != last->second + 1) {
            gapped.insert(row.unit);
            continue;
        }
        last_seq[row.unit] = seq;
        first_seq.try_emplace(row.unit, seq);  // id order: seq order
        oldest.push_back(std::move(row));
    }
    OutboxClaim claim;
    if (oldest.empty()) return claim;
    std::vector<std::string> topics, keys;
    std::vector<std::int64_t> seqs;
    for (const auto& [unit, seq] : first_seq) {
        topics.push_back(unit.topic);
        keys.push_back(unit.ordering_key);
        seqs.push_back(seq);
    }
    std::set<OutboxUnit> held_elsewhere;
    for (const auto& r : tx.exec_params(kOvertakingSql, group, text_array(topics), text_array(keys),
                                        int_array(seqs)))
        held_elsewhere.insert({r[0].as<std::string>(), r[1].as<std::string>()});

    std::vector<std::int64_t> chosen;
    std::size_t bytes = 0;
    std::set<OutboxUnit> seen;
    for (const auto& row : oldest) {
        if (held_elsewhere.contains(row.unit)) continue;
        if (!chosen.empty() && bytes + row.size > limits.bytes) break;
        chosen.push_back(row.id);
        bytes += row.size;
        if (seen.insert(row.unit).second) claim.units.emplace_back(row.unit, 0);
    }
    if (chosen.empty()) return claim;
    claim.rows = read_rows(tx, chosen);
    return claim;
}

}  // namespace

OutboxClaim claim_outbox_rows(pqxx::transaction_base& tx, const std::string& group,
                              const OutboxClaimLimits& limits, OutboxUnit& cursor) {
    if (!tx.exec_params(kAnyFailedUnitSql, group)[0][0].as<bool>())
        return claim_oldest_rows(tx, group, limits);
    OutboxClaim claim;
    const auto candidates = lock_units(tx, group, cursor, limits.rows);
    if (candidates.empty()) return claim;
    std::vector<std::int64_t> heads;
    heads.reserve(candidates.size());
    for (const auto& c : candidates) heads.push_back(c.head);

    // Each locked unit's rows (id, bytes) in seq order, by head: twice its fair
    // share of the round at most, so the listing stays O(rows taken) however
    // deep the units are.
    const int units = static_cast<int>(candidates.size());
    const int per_unit = std::min(limits.rows, 2 * ((limits.rows + units - 1) / units));
    std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::size_t>>> queued;
    for (const auto& r : tx.exec_params(kRowsSql, group, int_array(heads), per_unit))
        queued[r[0].as<std::int64_t>()].emplace_back(r[1].as<std::int64_t>(),
                                                     r[2].as<std::size_t>());

    // Round-robin in claim order, within the row and byte bounds; a unit whose
    // next row does not fit stops there (its order), the others go on.
    std::vector<std::int64_t> chosen;
    std::size_t bytes = 0;
    std::vector<bool> stopped(candidates.size(), false);
    for (std::size_t rank = 0; static_cast<int>(chosen.size()) < limits.rows; ++rank) {
        bool any = false;
        for (std::size_t u = 0; u < candidates.size(); ++u) {
            const auto it = queued.find(candidates[u].head);
            if (stopped[u] || it == queued.end() || rank >= it->second.size()) continue;
            const auto [id, size] = it->second[rank];
            if (static_cast<int>(chosen.size()) >= limits.rows ||
                (!chosen.empty() && bytes + size > limits.bytes)) {
                stopped[u] = true;
                continue;
            }
            if (rank == 0) {
                claim.units.emplace_back(candidates[u].unit, candidates[u].failures);
                cursor = candidates[u].unit;
            }
            chosen.push_back(id);
            bytes += size;
            any = true;
        }
        if (!any) break;
    }
    if (chosen.empty()) return claim;
    claim.rows = read_rows(tx, chosen);
    return claim;
}

void mark_outbox_sent(pqxx::transaction_base& tx, const std::string& group,
                      const std::vector<std::int64_t>& ids, bool keep) {
    if (ids.empty()) return;
    // Deleting the narrow pending row writes no index entry and leaves the
    // exo_outbox row as it was written: an UPDATE of it wrote a new copy of
    // the row and an entry in every index (sql/0010_exo_outbox_lean.sql). The
    // rows are the group's: found by its primary key (group, id).
    tx.exec_params(keep ? "DELETE FROM exo_outbox_pending WHERE consumer_group = $2"
                          " AND id = ANY($1::bigint[])"
                        : "WITH p AS (DELETE FROM exo_outbox_pending WHERE consumer_group = $2"
                          " AND id = ANY($1::bigint[]))"
                          " DELETE FROM exo_outbox WHERE id = ANY($1::bigint[])",
                   int_array(ids), group);
}

std::vector<ParkedUnit> park_outbox_units(pqxx::transaction_base& tx, const std::string& group,
                                          const std::vector<OutboxUnitFailure>& failures,
                                          std::chrono::milliseconds max_backoff) {
    std::vector<ParkedUnit> parked;
    if (failures.empty()) return parked;
    std::vector<std::string> topics, keys, reasons;
    std::vector<std::int64_t> ids;
    for (const auto& f : failures) {
        topics.push_back(f.unit.topic);
        keys.push_back(f.unit.ordering_key);
        ids.push_back(f.row_id);
        reasons.push_back(printable_text(f.reason, 1000));
    }
    // 500 ms doubling per failure in a row, at most max_backoff.
    const auto r = tx.exec_params(
        "INSERT INTO exo_outbox_units AS u (consumer_group, topic, ordering_key, failures,"
        " next_attempt_at, failed_id, reason)"
        " SELECT $1, f.t, decode(f.k, 'hex'), 1, now() + least($6::bigint, 500) * interval '1 ms',"
        " f.id, f.r FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[]) AS f(t, k, id, r)"
        " ON CONFLICT (consumer_group, topic, ordering_key) DO UPDATE SET"
        " failures = u.failures + 1, next_attempt_at = now() + least($6::bigint,"
        " 500 * power(2, least(u.failures, 30))::bigint) * interval '1 ms',"
        " failed_id = EXCLUDED.failed_id, reason = EXCLUDED.reason, last_failed_at = now()"
        " RETURNING topic, encode(ordering_key, 'hex'), failures,"
        " floor(extract(epoch FROM next_attempt_at - now()) * 1000)::bigint",
        group, text_array(topics), text_array(keys), int_array(ids), text_array(reasons),
        static_cast<std::int64_t>(max_backoff.count()));
    for (const auto& row : r)
        parked.push_back({{row[0].as<std::string>(), row[1].as<std::string>()},
                          row[2].as<int>(),
                          std::chrono::milliseconds(row[3].as<std::int64_t>())});
    return parked;
}

void unpark_outbox_units(pqxx::transaction_base& tx, const std::string& group,
                         const std::vector<OutboxUnit>& units) {
    if (units.empty()) return;
    std::vector<std::string> topics, keys;
    for (const auto& u : units) {
        topics.push_back(u.topic);
        keys.push_back(u.ordering_key);
    }
    tx.exec_params(
        "DELETE FROM exo_outbox_units u USING unnest($2::text[], $3::text[]) AS f(t, k)"
        " WHERE u.consumer_group = $1 AND u.topic = f.t AND u.ordering_key = decode(f.k, 'hex')",
        group, text_array(topics), text_array(keys));
}

OutboxBacklog outbox_backlog(pqxx::transaction_base& tx, const std::string& group) {
    const auto r = tx.exec_params(kBacklogSql, group, std::string(), std::string())[0];
    return {r[0].as<std::int64_t>(), std::chrono::milliseconds(r[1].as<std::int64_t>()),
            r[2].as<std::int64_t>()};
}

}  // namespace exo
