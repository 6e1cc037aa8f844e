#include "ledger.hpp"

#include <map>

#include <exo/errors.hpp>
#include <exo/outbox.hpp>
#include <exo/sql_arrays.hpp>

namespace exo::handlers {
namespace {

constexpr const char* kApply = "ledger_apply";
constexpr const char* kApplyBatch = "ledger_apply_batch";

template <class T>
T field(const nlohmann::json& doc, const char* name) {
    auto it = doc.find(name);
    if (it == doc.end()) throw PermanentError(std::string("payment has no '") + name + "'");
    try {
        return it->get<T>();
    } catch (const nlohmann::json::exception&) {
        throw PermanentError(std::string("payment field '") + name + "' has the wrong type (" +
                             it->type_name() + ")");
    }
}

}  // namespace

Payment Payment::parse(const nlohmann::json& doc, std::int64_t max_amount) {
    if (!doc.is_object()) throw PermanentError("payment must be a JSON object");
    Payment p{field<std::string>(doc, "eventId"), field<std::string>(doc, "accountId"),
              field<std::string>(doc, "type"), field<std::int64_t>(doc, "amount"),
              field<std::int64_t>(doc, "sequenceId")};
    if (p.type != "CREDIT" && p.type != "DEBIT")
        throw PermanentError("payment type must be CREDIT or DEBIT, not '" + p.type + "'");
    if (p.amount < 0) throw PermanentError("payment amount must not be negative");
    if (p.amount > max_amount)
        throw PermanentError("payment amount " + std::to_string(p.amount) +
                             " is above this binding's max_amount " + std::to_string(max_amount));
    return p;
}

std::string applied_topic_option(const HandlerOptions& options) {
    auto topic = options.string("applied_topic", kDefaultAppliedTopic);
    if (topic.empty()) return topic;
    if (auto problem = outbox_message_problem({topic, std::nullopt, "", {}}))
        options.fail("applied_topic", *problem);
    return topic;
}

std::int64_t max_amount_option(const HandlerOptions& options) {
    auto max_amount = options.integer("max_amount", std::numeric_limits<std::int64_t>::max());
    if (max_amount < 0) options.fail("max_amount", "must be at least 0");
    return max_amount;
}

void LedgerHandler::prepare(pqxx::connection_base& connection) {
    // One round trip per batch. The upsert's rows are one per account (an
    // ON CONFLICT DO UPDATE may not touch a row twice) in account order, so
    // two transactions lock accounts in the same order and cannot deadlock.
    // The entries' FK is checked at the end of the statement, when the
    // accounts exist.
    connection.prepare(kApplyBatch,
                       "WITH account AS ("
                       " INSERT INTO accounts AS a (account_id, balance)"
                       " SELECT * FROM unnest($1::text[], $2::bigint[])"
                       " ON CONFLICT (account_id) DO UPDATE"
                       " SET balance = a.balance + EXCLUDED.balance, updated_at = now())"
                       " INSERT INTO ledger_entries (event_id, account_id, entry_type, amount,"
                       " sequence_id)"
                       " SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::bigint[],"
                       " $7::bigint[])");
}

void LedgerHandler::handle_batch(BatchContext& ctx) {
    std::map<std::string, std::int64_t> moves;  // account -> net signed amount, sorted
    std::vector<std::string> event_ids, account_ids, types;
    std::vector<std::int64_t> amounts, sequence_ids;
    const auto records = ctx.records();
    for (std::size_t i = 0; i < records.size(); ++i) {
        auto& r = records[i];
        const auto& doc = r.json();  // not JSON: throws BatchRecordFailed(i, ...) itself
        Payment p;
        try {
            p = Payment::parse(doc, max_amount_);
        } catch (const PermanentError& e) {
            ctx.fail(i, e);  // only this payment is bad
        }
        if (!applied_topic_.empty()) r.emit(applied_topic_, p.account_id, r.record().value);
        auto& net = moves[p.account_id];
        if (__builtin_add_overflow(net, p.signed_amount(), &net))
            // Not one payment's fault: run them one by one and let PostgreSQL
            // refuse the one that takes the balance out of range.
            throw RetryableError("net amount of account " + p.account_id +
                                 " in one batch leaves bigint");
        event_ids.push_back(std::move(p.event_id));
        account_ids.push_back(std::move(p.account_id));
        types.push_back(std::move(p.type));
        amounts.push_back(p.amount);
        sequence_ids.push_back(p.sequence_id);
    }
    if (event_ids.empty()) return;
    std::vector<std::string> moved_accounts;
    std::vector<std::int64_t> moved_by;
    for (auto& [account, net] : moves) {
        moved_accounts.push_back(account);
        moved_by.push_back(net);
    }
    // No set_result(): a duplicate needs no answer beyond "already applied".
    ctx.transaction().exec_prepared(kApplyBatch, text_array(moved_accounts), int_array(moved_by),
                                    text_array(event_ids), text_array(account_ids),
                                    text_array(types), int_array(amounts), int_array(sequence_ids));
}

void LedgerRecordHandler::prepare(pqxx::connection_base& connection) {
    // One round trip: upsert the account with the signed amount and write the
    // entry. The CTE order does not matter for correctness: the entry's FK is
    // checked at the end of the statement, when the account exists.
    connection.prepare(kApply,
                       "WITH account AS ("
                       " INSERT INTO accounts (account_id, balance) VALUES ($2, $5)"
                       " ON CONFLICT (account_id) DO UPDATE"
                       " SET balance = accounts.balance + EXCLUDED.balance, updated_at = now()"
                       " RETURNING balance)"
                       " INSERT INTO ledger_entries (event_id, account_id, entry_type, amount,"
                       " sequence_id) SELECT $1, $2, $3, $4, $6 FROM account");
}

void LedgerRecordHandler::handle(HandlerContext& ctx) {
    const Payment p = Payment::parse(ctx.json(), max_amount_);
    // No set_result(): a duplicate needs no answer beyond "already applied", and
    // a stored result would cost an UPDATE per record.
    ctx.transaction().exec_prepared(kApply, p.event_id, p.account_id, p.type, p.amount,
                                    p.signed_amount(), p.sequence_id);
    if (!applied_topic_.empty()) ctx.emit(applied_topic_, p.account_id, ctx.record().value);
}

}  // namespace exo::handlers
