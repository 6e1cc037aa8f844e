#include "set_based_prototype.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <pqxx/pqxx>
#include <set>
#include <unordered_map>

#include <exo/sql_arrays.hpp>
#include "api/context_access.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "core/sequence_decision.hpp"
#include "pg/framework_statements.hpp"

namespace exo::bench {
namespace {

constexpr const char* kDedup = "proto_dedup";
constexpr const char* kExisting = "proto_existing";
constexpr const char* kLockSequences = "proto_lock_sequences";
constexpr const char* kUpsertSequences = "proto_upsert_sequences";
constexpr const char* kLedger = "proto_ledger";

struct Item {
    std::size_t index = 0;
    Record record;
    std::string key;
    SequenceValue sequence;
    bool is_new = false;
    SequenceVerdict verdict = SequenceVerdict::apply;
};

}  // namespace

void prepare_set_based(pqxx::connection_base& c) {
    c.prepare(
        kDedup,
        "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
        " kafka_partition, kafka_offset, outcome)"
        " SELECT $1, u.k, u.t, $2, u.p, u.o, 'APPLIED'"
        " FROM unnest($3::text[], $4::bigint[], $5::int[], $6::bigint[]) AS u(k, t, p, o)"
        " ON CONFLICT (consumer_group, idempotency_key) DO NOTHING RETURNING idempotency_key");
    // Each key is looked up by a LATERAL subquery with LIMIT 1: that cannot be
    // flattened into a join, so the plan is one primary-key probe per key whatever
    // the statistics. A plain join with unnest() (or "= ANY(array)") gets a
    // generic plan made while the table was empty (a scan of the whole group,
    // hashed), which then costs O(table) per batch as the table grows.
    c.prepare(kExisting,
              "SELECT u.k, p.outcome, p.result FROM unnest($2::text[]) AS u(k),"
              " LATERAL (SELECT outcome, coalesce(result, '') AS result FROM exo_processed"
              " WHERE consumer_group = $1 AND idempotency_key = u.k LIMIT 1) AS p");
    c.prepare(kLockSequences,
              "SELECT u.e, s.last_sequence FROM unnest($2::text[]) AS u(e),"
              " LATERAL (SELECT last_sequence FROM exo_sequences"
              " WHERE handler = $1 AND entity = u.e LIMIT 1 FOR UPDATE) AS s");
    c.prepare(kUpsertSequences,
              "INSERT INTO exo_sequences AS s (handler, entity, last_sequence)"
              " SELECT $1, u.e, u.q FROM unnest($2::text[], $3::bigint[]) AS u(e, q)"
              " ON CONFLICT (handler, entity) DO UPDATE"
              " SET last_sequence = EXCLUDED.last_sequence, updated_at = now()"
              " WHERE s.last_sequence < EXCLUDED.last_sequence");
    c.prepare(kLedger,
              "WITH e AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[],"
              " $5::bigint[], $6::bigint[]) AS u(event_id, account_id, entry_type, amount,"
              " signed_amount, sequence_id)),"
              " acc AS (INSERT INTO accounts AS a (account_id, balance)"
              " SELECT account_id, sum(signed_amount) FROM e GROUP BY account_id"
              " ON CONFLICT (account_id) DO UPDATE"
              " SET balance = a.balance + EXCLUDED.balance, updated_at = now() RETURNING 1)"
              " INSERT INTO ledger_entries (event_id, account_id, entry_type, amount, sequence_id)"
              " SELECT event_id, account_id, entry_type, amount, sequence_id FROM e");
}

void run_set_based(pqxx::connection& conn, const Isolation& iso, const TopicWorkload& w,
                   const std::vector<std::size_t>& indexes, int batch_size, bool set_handler,
                   int thread, handlers::LedgerRecordHandler& handler, ShareOutcome& out) {
    const KeySource key_source = ledger_key_source();
    const SequenceConfig sequence = ledger_sequence_config();
    const Topic topic{w.topic};
    auto& log = *spdlog::default_logger();
    for (std::size_t begin = 0; begin < indexes.size();
         begin += static_cast<std::size_t>(batch_size)) {
        auto end = std::min(indexes.size(), begin + static_cast<std::size_t>(batch_size));
        std::vector<Item> items;
        items.reserve(end - begin);
        std::vector<JsonPayload> payloads;
        payloads.reserve(end - begin);
        std::vector<std::string> keys;
        std::vector<std::int64_t> tokens, offsets;
        std::vector<int> partitions;
        for (std::size_t n = begin; n < end; ++n) {
            auto i = indexes[n];
            Item item;
            item.index = i;
            item.record = Record{topic,
                                 Partition{thread},
                                 Offset{static_cast<std::int64_t>(i)},
                                 w.workload.messages[i].payment.account_id,
                                 w.payloads[i],
                                 {},
                                 -1};
            items.push_back(std::move(item));
        }
        for (auto& item : items) {
            payloads.emplace_back(item.record.value);
            item.key = derive_idempotency_key(key_source, item.record, payloads.back());
            item.sequence = extract_sequence(sequence, payloads.back());
            keys.push_back(item.key);
            tokens.push_back(1);
            partitions.push_back(thread);
            offsets.push_back(item.record.offset.value);
        }

        pqxx::work tx(conn);
        // 1. Dedup rows. The first record of a key in the batch owns the row.
        std::set<std::string> inserted;
        for (const auto& row :
             tx.exec_prepared(kDedup, iso.group, w.topic, text_array(keys), int_array(tokens),
                              int_array(partitions), int_array(offsets)))
            inserted.insert(row[0].as<std::string>());
        out.round_trips++;
        std::vector<std::string> duplicate_keys;
        for (auto& item : items) {
            item.is_new = inserted.erase(item.key) == 1;
            if (!item.is_new) duplicate_keys.push_back(item.key);
        }
        if (!duplicate_keys.empty()) {
            // The stored outcome and result, which the pipeline needs for a duplicate.
            tx.exec_prepared(kExisting, iso.group, text_array(duplicate_keys));
            out.round_trips++;
            out.duplicates += duplicate_keys.size();
        }

        // 2. Sequences: lock, decide in record order, write each entity's last.
        std::vector<std::string> entities;
        std::set<std::string> seen;
        for (const auto& item : items)
            if (item.is_new && seen.insert(item.sequence.entity).second)
                entities.push_back(item.sequence.entity);
        std::unordered_map<std::string, std::optional<std::int64_t>> last;
        for (const auto& e : entities) last[e] = std::nullopt;
        if (!entities.empty()) {
            for (const auto& row : tx.exec_prepared(kLockSequences, "ledger", text_array(entities)))
                last[row[0].as<std::string>()] = row[1].as<std::int64_t>();
            out.round_trips++;
        }
        std::map<std::string, std::int64_t> advanced;
        std::vector<std::string> stale_keys;
        for (auto& item : items) {
            if (!item.is_new) continue;
            auto& l = last[item.sequence.entity];
            item.verdict = decide_sequence(sequence.mode, l, item.sequence.sequence);
            if (item.verdict == SequenceVerdict::gap)
                throw std::runtime_error("sequence gap for " + item.sequence.entity);
            if (item.verdict == SequenceVerdict::stale) {
                stale_keys.push_back(item.key);
                continue;
            }
            l = item.sequence.sequence;
            advanced[item.sequence.entity] = item.sequence.sequence;
        }
        if (!advanced.empty()) {
            std::vector<std::string> es;
            std::vector<std::int64_t> qs;
            for (const auto& [e, q] : advanced) {
                es.push_back(e);
                qs.push_back(q);
            }
            auto r = tx.exec_prepared(kUpsertSequences, "ledger", text_array(es), int_array(qs));
            out.round_trips++;
            if (r.affected_rows() != es.size())
                throw std::runtime_error("a sequence moved concurrently: retry the batch");
        }
        // Stale records are rare (none in this workload): exo's per-record UPDATE.
        for (const auto& key : stale_keys) {
            update_processed(tx, iso.group, key, StoredOutcome::stale, "");
            out.round_trips++;
            out.stale++;
        }

        // 3. The ledger effects.
        if (set_handler) {
            std::vector<std::string> events, accounts, types;
            std::vector<std::int64_t> amounts, signed_amounts, sequences;
            for (std::size_t n = 0; n < items.size(); ++n) {
                const auto& item = items[n];
                if (!item.is_new || item.verdict != SequenceVerdict::apply) continue;
                const auto& doc = payloads[n].document();
                events.push_back(doc.at("eventId").get<std::string>());
                accounts.push_back(doc.at("accountId").get<std::string>());
                types.push_back(doc.at("type").get<std::string>());
                auto amount = doc.at("amount").get<std::int64_t>();
                amounts.push_back(amount);
                signed_amounts.push_back(types.back() == "CREDIT" ? amount : -amount);
                sequences.push_back(doc.at("sequenceId").get<std::int64_t>());
            }
            if (!events.empty()) {
                tx.exec_prepared(kLedger, text_array(events), text_array(accounts),
                                 text_array(types), int_array(amounts), int_array(signed_amounts),
                                 int_array(sequences));
                out.round_trips++;
                out.applied += events.size();
            }
        } else {
            for (std::size_t n = 0; n < items.size(); ++n) {
                auto& item = items[n];
                if (!item.is_new || item.verdict != SequenceVerdict::apply) continue;
                auto ctx = detail::ContextAccess::record(tx, item.record, item.key, payloads[n],
                                                         log, 1, false, nullptr, nullptr);
                handler.handle(ctx);
                out.round_trips++;
                out.applied++;
            }
        }
        tx.commit();
        out.round_trips += 2;  // BEGIN and COMMIT
    }
}

}  // namespace exo::bench
