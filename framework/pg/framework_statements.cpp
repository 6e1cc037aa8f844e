#include "pg/framework_statements.hpp"

#include <algorithm>
#include <pqxx/pqxx>

#include "pg/process_identity.hpp"
#include "pg/record_start.hpp"

namespace exo {
namespace {

constexpr const char* kInsertProcessed = "exo_insert_processed";
constexpr const char* kSelectProcessed = "exo_select_processed";
constexpr const char* kUpdateProcessed = "exo_update_processed";
constexpr const char* kStartLatest = "exo_start_record_latest";
constexpr const char* kStartStrict = "exo_start_record_strict";
constexpr const char* kDeleteProcessed = "exo_delete_processed";
constexpr const char* kRecordGap = "exo_record_gap";
constexpr const char* kClearGap = "exo_clear_gap";

// Dedup row and sequence step in one statement: the sequence moves only if the
// dedup row was inserted (a duplicate must never advance it), and only by the
// mode's rule (mirrors decide_sequence()). `prev` locks the entity's row so the
// check and the write cannot be split by a concurrent transaction. `process`:
// this process's exo_processes id, a constant of the connection's statements.
std::string start_sql(const std::string& process, const char* first_rule, const char* rule) {
    return "WITH ins AS (INSERT INTO exo_processed (consumer_group, idempotency_key,"
           " fencing_token, topic, kafka_partition, kafka_offset, outcome, applied_by_process,"
           " fingerprint) VALUES ($1, $2, $3, $4, $5, $6, 'APPLIED', " +
           process +
           ", NULLIF($10::text, ''))"
           " ON CONFLICT (consumer_group, idempotency_key) DO NOTHING RETURNING 1),"
           " prev AS (SELECT last_sequence FROM exo_sequences"
           " WHERE handler = $7::text AND entity = $8::text FOR UPDATE),"
           " up AS (INSERT INTO exo_sequences AS s (handler, entity, last_sequence)"
           " SELECT $7::text, $8::text, $9::bigint WHERE EXISTS (SELECT 1 FROM ins)"
           " AND (EXISTS (SELECT 1 FROM prev) OR " +
           first_rule +
           ") ON CONFLICT (handler, entity) DO UPDATE"
           " SET last_sequence = EXCLUDED.last_sequence, updated_at = now() WHERE " +
           rule +
           " RETURNING 1)"
           " SELECT EXISTS (SELECT 1 FROM ins), (SELECT last_sequence FROM prev),"
           " EXISTS (SELECT 1 FROM up)";
}

}  // namespace

void prepare_framework_statements(pqxx::connection_base& c) {
    // The dedup inserts name this process by its id, written into the
    // statements: a connection's statements are its process's.
    const auto process = std::to_string(register_process(c));
    c.prepare(kInsertProcessed,
              "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
              " kafka_partition, kafka_offset, outcome, result, applied_by_process, fingerprint)"
              " VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), " +
                  process +
                  ", NULLIF($9, ''))"
                  " ON CONFLICT (consumer_group, idempotency_key) DO NOTHING RETURNING 1");
    c.prepare(kSelectProcessed,
              "SELECT outcome, coalesce(result, ''), fingerprint, topic, kafka_partition,"
              " kafka_offset FROM exo_processed"
              " WHERE consumer_group = $1 AND idempotency_key = $2");
    c.prepare(kUpdateProcessed,
              "UPDATE exo_processed SET outcome = $3, result = NULLIF($4, '')"
              " WHERE consumer_group = $1 AND idempotency_key = $2");
    c.prepare(kStartLatest, start_sql(process, "true", "s.last_sequence < EXCLUDED.last_sequence"));
    // "last + 1 = next" would overflow bigint at last = INT64_MAX and fail the
    // record instead of answering STALE; "next - 1" cannot (next >= 0).
    c.prepare(kStartStrict,
              start_sql(process, "$9::bigint = 1", "s.last_sequence = EXCLUDED.last_sequence - 1"));
    c.prepare(kDeleteProcessed,
              "DELETE FROM exo_processed WHERE consumer_group = $1 AND idempotency_key = $2");
    // The first sighting is kept (DO NOTHING); its age is measured in server time.
    c.prepare(kRecordGap,
              "WITH ins AS (INSERT INTO exo_sequence_gaps (consumer_group, idempotency_key)"
              " VALUES ($1, $2) ON CONFLICT (consumer_group, idempotency_key) DO NOTHING"
              " RETURNING first_seen)"
              " SELECT floor(extract(epoch FROM now() - coalesce((SELECT first_seen FROM ins),"
              " (SELECT first_seen FROM exo_sequence_gaps WHERE consumer_group = $1"
              " AND idempotency_key = $2), now())) * 1000)::bigint");
    c.prepare(kClearGap,
              "DELETE FROM exo_sequence_gaps WHERE consumer_group = $1 AND idempotency_key = $2");
    prepare_record_start_statements(c, process);
}

namespace {

// The row that made an insert a no-op. Retention may have deleted it since:
// the key was then settled long ago, and APPLIED is as good an answer as any.
ExistingRow existing_row(pqxx::transaction_base& tx, const std::string& group,
                         const std::string& key) {
    auto existing = tx.exec_prepared(kSelectProcessed, group, key);
    if (existing.empty()) return ExistingRow{StoredOutcome::applied, "", {}};
    return existing_row_of(key, existing[0][0].as<std::string>(), existing[0][1].as<std::string>(),
                           applied_copy_of(existing[0], 2));
}

}  // namespace

AppliedCopy applied_copy_of(const pqxx::row& row, pqxx::row::size_type first) {
    AppliedCopy out;
    if (!row[first].is_null()) out.fingerprint = row[first].as<std::string>();
    out.topic = row[first + 1].as<std::string>();
    out.partition = row[first + 2].as<std::int32_t>();
    out.offset = row[first + 3].as<std::int64_t>();
    return out;
}

ExistingRow existing_row_of(const std::string& key, const std::string& outcome_text,
                            std::string result, AppliedCopy applied) {
    const auto outcome = parse_stored_outcome(outcome_text);
    // The table's CHECK constraint allows no other value; a newer exo's would
    // need this one to learn it, not to guess.
    if (!outcome)
        throw std::runtime_error("exo_processed row for key '" + key + "' has outcome '" +
                                 outcome_text +
                                 "', unknown to this exo: run the exo version that wrote it");
    return ExistingRow{*outcome, std::move(result), std::move(applied)};
}

std::optional<ExistingRow> insert_processed(pqxx::transaction_base& tx, const ProcessedRow& row) {
    auto inserted =
        tx.exec_prepared(kInsertProcessed, row.consumer_group, row.idempotency_key, row.token.value,
                         row.partition.topic.value, row.partition.partition.value, row.offset.value,
                         to_sql(row.outcome), row.result, row.fingerprint);
    if (!inserted.empty()) return std::nullopt;
    return existing_row(tx, row.consumer_group, row.idempotency_key);
}

RecordStart start_record(pqxx::transaction_base& tx, const ProcessedRow& row,
                         const std::optional<SequenceStep>& sequence) {
    RecordStart out;
    if (!sequence) {
        out.duplicate = insert_processed(tx, row);
        if (!out.duplicate) out.verdict = SequenceVerdict::apply;
        return out;
    }
    auto r =
        tx.exec_prepared(sequence->mode == SequenceMode::strict ? kStartStrict : kStartLatest,
                         row.consumer_group, row.idempotency_key, row.token.value,
                         row.partition.topic.value, row.partition.partition.value, row.offset.value,
                         sequence->handler, sequence->entity, sequence->sequence, row.fingerprint);
    if (!r[0][0].as<bool>()) {
        out.duplicate = existing_row(tx, row.consumer_group, row.idempotency_key);
        return out;
    }
    if (r[0][2].as<bool>()) {
        out.verdict = SequenceVerdict::apply;
        return out;
    }
    std::optional<std::int64_t> previous;
    if (!r[0][1].is_null()) previous = r[0][1].as<std::int64_t>();
    auto verdict = decide_sequence(sequence->mode, previous, sequence->sequence);
    if (verdict != SequenceVerdict::apply) out.verdict = verdict;  // else: moved meanwhile
    return out;
}

void delete_processed(pqxx::transaction_base& tx, const std::string& group,
                      const std::string& key) {
    tx.exec_prepared(kDeleteProcessed, group, key);
}

void update_processed(pqxx::transaction_base& tx, const std::string& group, const std::string& key,
                      StoredOutcome outcome, const std::string& result) {
    tx.exec_prepared(kUpdateProcessed, group, key, to_sql(outcome), result);
}

std::chrono::milliseconds record_gap(pqxx::transaction_base& tx, const std::string& group,
                                     const std::string& key) {
    auto r = tx.exec_prepared(kRecordGap, group, key);
    return std::chrono::milliseconds(std::max<std::int64_t>(0, r[0][0].as<std::int64_t>()));
}

void clear_gap(pqxx::transaction_base& tx, const std::string& group, const std::string& key) {
    tx.exec_prepared(kClearGap, group, key);
}

}  // namespace exo
