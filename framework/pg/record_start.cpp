#include "pg/record_start.hpp"

#include <algorithm>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <exo/sql_arrays.hpp>
#include "core/sequence_plan.hpp"

namespace exo {
namespace {

constexpr const char* kRecordsStart = "exo_records_start";
constexpr const char* kRecordsExisting = "exo_records_existing";
constexpr const char* kRecordsSequences = "exo_records_sequences";
constexpr const char* kLockEntities = "exo_lock_entities";

// Every transaction's entity lock. The entities come sorted and unique, each
// probed by LATERAL subqueries with LIMIT 1 (primary-key probes per entity,
// whatever the statistics and the number of entities; a join with unnest(), or
// an EXISTS, may get a generic plan that scans or hashes the whole table) and
// locked FOR UPDATE SKIP LOCKED: a row another transaction holds is never
// waited for. Each entity answers its 1-based position in the arrays, its last
// sequence if it is locked now, and `held`: not locked, yet it exists in the
// statement's snapshot (probed only then). An entity with neither is new.
// Sorted, so that lockers that do wait (the per-record statement meeting a row
// created after the probe, `exo sequence advance`, an older exo during a
// rolling upgrade) still meet entity rows in one global order.
std::string entity_probe(const char* handlers, const char* entities) {
    return std::string("SELECT u.n, s.last_sequence, x.found IS NOT NULL AS held FROM unnest(") +
           handlers + "::text[], " + entities +
           "::text[]) WITH ORDINALITY AS u(h, e, n)"
           " LEFT JOIN LATERAL (SELECT last_sequence FROM exo_sequences"
           " WHERE handler = u.h AND entity = u.e LIMIT 1 FOR UPDATE SKIP LOCKED) AS s ON true"
           " LEFT JOIN LATERAL (SELECT true AS found FROM exo_sequences WHERE s.last_sequence"
           " IS NULL AND handler = u.h AND entity = u.e LIMIT 1) AS x ON true";
}

// Statement A: the probe of every entity of the transaction's records, and the
// dedup rows of the records whose entity is not held ($9: each key's entity
// position, 0 for none). Rows answer either an inserted key (first column
// NULL) or an entity: its position, last sequence and `held`. The insert reads
// the probe, so an entity is locked or found held before any row of its records
// is written. The keys come sorted, and `ORDER BY` keeps the insert in that
// order whatever the plan: two transactions that insert some of the same keys
// wait for each other instead of deadlocking. `process`: this process's
// exo_processes id, a constant of the connection's statement.
std::string records_start_sql(const std::string& process) {
    return "WITH seq AS MATERIALIZED (" + entity_probe("$7", "$8") +
           "),"
           " ins AS (INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token,"
           " topic, kafka_partition, kafka_offset, outcome, applied_by_process, fingerprint)"
           " SELECT $1::text, u.k, u.t, u.tp, u.p, u.o, 'APPLIED', " +
           process +
           ", NULLIF(u.fp, '') FROM unnest($2::text[], $3::bigint[], $4::text[], $5::int[],"
           " $6::bigint[], $9::bigint[], $10::text[]) WITH ORDINALITY AS u(k, t, tp, p, o, en, fp, "
           "n)"
           " WHERE NOT EXISTS (SELECT 1 FROM seq WHERE seq.n = u.en AND seq.held)"
           " ORDER BY u.n"
           " ON CONFLICT (consumer_group, idempotency_key) DO NOTHING RETURNING idempotency_key)"
           " SELECT NULL::bigint, idempotency_key, NULL::bigint, false FROM ins"
           " UNION ALL SELECT n, NULL::text, last_sequence, held FROM seq";
}

// The careful pass's up-front lock: the probe alone, answering the held entities.
std::string lock_entities_sql() {
    return "WITH seq AS MATERIALIZED (" + entity_probe("$1", "$2") +
           ") SELECT n FROM seq WHERE held";
}

// The rows of keys that were already there (a separate statement, as in
// start_record: it sees rows committed while the insert waited for them).
constexpr const char* kRecordsExistingSql =
    "SELECT u.k, p.outcome, p.result, p.fingerprint, p.topic, p.kafka_partition, p.kafka_offset"
    " FROM unnest($2::text[]) AS u(k),"
    " LATERAL (SELECT outcome, coalesce(result, '') AS result, fingerprint, topic,"
    " kafka_partition, kafka_offset FROM exo_processed"
    " WHERE consumer_group = $1 AND idempotency_key = u.k LIMIT 1) AS p";

// Statement C writes the plan's sequences: entities locked by statement A are
// moved (their row exists and is ours); new ones are created with DO NOTHING,
// and a creation that finds a row means a concurrent transaction created the
// entity after statement A read it as new: the plan is void.
constexpr const char* kRecordsSequencesSql =
    "WITH moved AS (INSERT INTO exo_sequences AS s (handler, entity, last_sequence)"
    " SELECT h, e, q FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(h, e, q)"
    " ON CONFLICT (handler, entity) DO UPDATE"
    " SET last_sequence = EXCLUDED.last_sequence, updated_at = now() RETURNING 1),"
    " created AS (INSERT INTO exo_sequences (handler, entity, last_sequence)"
    " SELECT h, e, q FROM unnest($4::text[], $5::text[], $6::bigint[]) AS u(h, e, q)"
    " ON CONFLICT (handler, entity) DO NOTHING RETURNING handler, entity)"
    " SELECT u.e FROM unnest($4::text[], $5::text[]) AS u(h, e)"
    " WHERE (u.h, u.e) NOT IN (SELECT handler, entity FROM created)";

// Stale rows say so; gap rows go and their first sighting is kept; the rows of
// records left out after their insert ($4: behind a held record of their lane)
// go. Rare, so not prepared: a custom plan sees how few keys the arrays hold and
// probes the primary key (a generic plan of "= ANY(array)" may scan the whole
// consumer group).
constexpr const char* kRecordsSettleSql =
    "WITH st AS (UPDATE exo_processed SET outcome = 'STALE', result = NULL"
    " WHERE consumer_group = $1::text AND idempotency_key = ANY($2::text[])),"
    " del AS (DELETE FROM exo_processed"
    " WHERE consumer_group = $1::text AND idempotency_key = ANY($3::text[] || $4::text[])),"
    " g AS (INSERT INTO exo_sequence_gaps (consumer_group, idempotency_key)"
    " SELECT $1::text, k FROM unnest($3::text[]) AS u(k)"
    " ON CONFLICT (consumer_group, idempotency_key) DO NOTHING"
    " RETURNING idempotency_key, first_seen)"
    " SELECT u.k, floor(extract(epoch FROM now() - coalesce(g.first_seen,"
    " (SELECT x.first_seen FROM exo_sequence_gaps x"
    " WHERE x.consumer_group = $1::text AND x.idempotency_key = u.k), now())) * 1000)::bigint"
    " FROM unnest($3::text[]) AS u(k) LEFT JOIN g ON g.idempotency_key = u.k";

}  // namespace

void prepare_record_start_statements(pqxx::connection_base& c, const std::string& process) {
    c.prepare(kRecordsStart, records_start_sql(process));
    c.prepare(kRecordsExisting, kRecordsExistingSql);
    c.prepare(kRecordsSequences, kRecordsSequencesSql);
    c.prepare(kLockEntities, lock_entities_sql());
}

EntityLocks lock_entities(pqxx::transaction_base& tx, const std::vector<SequenceStep>& steps) {
    EntityLocks out;
    const std::set<EntityId> sorted = [&] {
        std::set<EntityId> ids;
        for (const auto& step : steps) ids.emplace(step.handler, step.entity);
        return ids;
    }();
    if (sorted.empty()) return out;
    const std::vector<EntityId> ids(sorted.begin(), sorted.end());
    std::vector<std::string> handlers, entities;
    for (const auto& [handler, entity] : ids) {
        handlers.push_back(handler);
        entities.push_back(entity);
    }
    for (const auto& row :
         tx.exec_prepared(kLockEntities, text_array(handlers), text_array(entities)))
        out.held.insert(ids.at(row[0].as<std::size_t>() - 1));
    out.round_trips = 1;
    return out;
}

RecordsStart start_records(pqxx::transaction_base& tx, const std::string& consumer_group,
                           const std::vector<RecordToStart>& records, const LeaveOut& leave_out) {
    RecordsStart out;
    out.records.resize(records.size());
    if (records.empty()) return out;

    // Sorted and unique: the order every transaction locks entities in.
    std::map<EntityId, std::size_t> entity_index;
    for (const auto& r : records)
        if (r.sequence) entity_index.emplace(EntityId{r.sequence->handler, r.sequence->entity}, 0);
    std::vector<std::string> handlers, entities;
    for (auto& [id, index] : entity_index) {
        index = entities.size();
        handlers.push_back(id.first);
        entities.push_back(id.second);
    }
    // records[i]'s entity, as an index into `entities`.
    const auto entity_of = [&](const RecordToStart& r) {
        return entity_index.at(EntityId{r.sequence->handler, r.sequence->entity});
    };

    // The dedup rows go in sorted by key, too: two transactions that insert
    // some of the same keys (two copies of one event in two partitions, with
    // Redis forgetful or skipped) then wait for each other instead of
    // deadlocking. (Their order among the records is the partitions'.)
    std::vector<const RecordToStart*> by_key;
    by_key.reserve(records.size());
    for (const auto& r : records) by_key.push_back(&r);
    std::sort(by_key.begin(), by_key.end(),
              [](const RecordToStart* a, const RecordToStart* b) { return a->key < b->key; });
    std::vector<std::string> keys, topics, fingerprints;
    std::vector<std::int64_t> tokens, offsets, key_entities;
    std::vector<std::int32_t> partitions;
    for (const auto* record : by_key) {
        const auto& r = *record;
        keys.push_back(r.key);
        tokens.push_back(r.token.value);
        topics.push_back(r.partition.topic.value);
        partitions.push_back(r.partition.partition.value);
        offsets.push_back(r.offset.value);
        fingerprints.push_back(r.fingerprint);
        // 1-based, as the statement numbers entities; 0: no entity.
        key_entities.push_back(r.sequence ? static_cast<std::int64_t>(entity_of(r)) + 1 : 0);
    }
    auto started = tx.exec_prepared(kRecordsStart, consumer_group, text_array(keys),
                                    int_array(tokens), text_array(topics), int_array(partitions),
                                    int_array(offsets), text_array(handlers), text_array(entities),
                                    int_array(key_entities), text_array(fingerprints));
    ++out.round_trips;
    std::unordered_set<std::string> inserted;
    std::vector<std::optional<std::int64_t>> last(entities.size());
    std::vector<bool> entity_held(entities.size(), false);
    for (const auto& row : started) {
        if (row[0].is_null()) {
            inserted.insert(row[1].as<std::string>());
            continue;
        }
        const auto e = row[0].as<std::size_t>() - 1;
        if (!row[2].is_null()) last.at(e) = row[2].as<std::int64_t>();
        entity_held.at(e) = row[3].as<bool>();
    }

    // Records whose entity another transaction holds got no dedup row; the
    // caller puts them back, with what must wait behind them. Those may have
    // had their rows inserted: they go again in the last statement.
    std::vector<bool> left_out(records.size(), false);
    std::vector<std::size_t> held;
    for (std::size_t i = 0; i < records.size(); ++i)
        if (records[i].sequence && entity_held[entity_of(records[i])]) held.push_back(i);
    if (!held.empty()) {
        left_out = leave_out(held);
        if (left_out.size() != records.size())
            throw std::logic_error("start_records: LeaveOut answered " +
                                   std::to_string(left_out.size()) + " flags for " +
                                   std::to_string(records.size()) + " records");
        for (auto i : held)
            if (!left_out[i])
                throw std::logic_error("start_records: LeaveOut kept in record " + records[i].key +
                                       ", whose entity is held");
    }
    std::vector<std::string> unstarted;
    for (std::size_t i = 0; i < records.size(); ++i) {
        if (!left_out[i]) continue;
        out.records[i].left_out = true;
        if (inserted.contains(records[i].key)) unstarted.push_back(records[i].key);
    }

    std::vector<std::string> known;
    for (std::size_t i = 0; i < records.size(); ++i)
        if (!left_out[i] && !inserted.contains(records[i].key)) known.push_back(records[i].key);
    std::unordered_map<std::string, ExistingRow> existing;
    if (!known.empty()) {
        for (const auto& row :
             tx.exec_prepared(kRecordsExisting, consumer_group, text_array(known))) {
            auto key = row[0].as<std::string>();
            existing.emplace(
                key, existing_row_of(key, row[1].as<std::string>(), row[2].as<std::string>(),
                                     applied_copy_of(row, 3)));
        }
        ++out.round_trips;
    }

    std::vector<PlannedRecord> planned;
    std::vector<std::size_t> planned_record;  // planned[n] is records[planned_record[n]]
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& r = records[i];
        auto& decided = out.records[i];
        if (left_out[i]) continue;
        if (!inserted.contains(r.key)) {
            // Retention may have deleted the row since: the key was then
            // settled long ago, and APPLIED is as good an answer as any.
            auto found = existing.find(r.key);
            decided.duplicate = found != existing.end()
                                    ? found->second
                                    : ExistingRow{StoredOutcome::applied, "", {}};
            continue;
        }
        if (!r.sequence) {
            decided.verdict = SequenceVerdict::apply;
            continue;
        }
        planned.push_back({entity_of(r), r.sequence->mode, r.sequence->sequence});
        planned_record.push_back(i);
    }
    const auto plan = plan_sequences(last, planned);
    for (std::size_t n = 0; n < planned.size(); ++n)
        out.records[planned_record[n]].verdict = plan.verdicts[n];

    std::vector<std::string> moved_h, moved_e, created_h, created_e;
    std::vector<std::int64_t> moved_q, created_q;
    for (std::size_t e = 0; e < entities.size(); ++e) {
        if (!plan.moved[e]) continue;
        auto& h = last[e] ? moved_h : created_h;
        auto& en = last[e] ? moved_e : created_e;
        auto& q = last[e] ? moved_q : created_q;
        h.push_back(handlers[e]);
        en.push_back(entities[e]);
        q.push_back(*plan.last[e]);
    }
    if (!moved_e.empty() || !created_e.empty()) {
        auto written = tx.exec_prepared(kRecordsSequences, text_array(moved_h), text_array(moved_e),
                                        int_array(moved_q), text_array(created_h),
                                        text_array(created_e), int_array(created_q));
        ++out.round_trips;
        if (!written.empty()) {
            out.contended = written[0][0].as<std::string>();
            out.records.clear();
            return out;
        }
    }

    std::vector<std::string> stale, gaps;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& verdict = out.records[i].verdict;
        if (verdict == SequenceVerdict::stale) stale.push_back(records[i].key);
        if (verdict == SequenceVerdict::gap) gaps.push_back(records[i].key);
    }
    if (stale.empty() && gaps.empty() && unstarted.empty()) return out;
    auto settled = tx.exec_params(kRecordsSettleSql, consumer_group, text_array(stale),
                                  text_array(gaps), text_array(unstarted));
    ++out.round_trips;
    std::unordered_map<std::string, std::int64_t> waited;
    for (const auto& row : settled) waited[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    for (std::size_t i = 0; i < records.size(); ++i)
        if (out.records[i].verdict == SequenceVerdict::gap)
            out.records[i].gap_waited =
                std::chrono::milliseconds(std::max<std::int64_t>(0, waited.at(records[i].key)));
    return out;
}

void store_results(pqxx::transaction_base& tx, const std::string& consumer_group,
                   const std::vector<std::string>& keys, const std::vector<std::string>& results) {
    tx.exec_params(
        "UPDATE exo_processed p SET result = r.result"
        " FROM unnest($2::text[], $3::text[]) AS r(idempotency_key, result)"
        " WHERE p.consumer_group = $1::text AND p.idempotency_key = r.idempotency_key",
        consumer_group, text_array(keys), text_array(results));
}

}  // namespace exo
