#include "ledger.hpp"

#include <exo/errors.hpp>

namespace exo::handlers {
namespace {

constexpr const char* kApply = "ledger_apply";

struct Payment {
    std::string event_id;
    std::string account_id;
    std::string type;
    std::int64_t amount = 0;
    std::int64_t sequence_id = 0;
};

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

Payment parse(const nlohmann::json& doc) {
    if (!doc.is_object()) throw PermanentError("payment must be a JSON object");
    Payment p{field<std::string>(doc, "eventId"), field<std::string>(doc, "accountId"),
              field<std::string>(doc, "type"), field<std::int64_t>(doc, "amount"),
              field<std::int64_t>(doc, "sequenceId")};
    if (p.type != "CREDIT" && p.type != "DEBIT")
        throw PermanentError("payment type must be CREDIT or DEBIT, not '" + p.type + "'");
    if (p.amount < 0) throw PermanentError("payment amount must not be negative");
    return p;
}

}  // namespace

LedgerHandler::LedgerHandler(const HandlerOptions& options)
    : max_amount_(options.integer("max_amount", std::numeric_limits<std::int64_t>::max())) {
    if (max_amount_ < 0) options.fail("max_amount", "must be at least 0");
}

void LedgerHandler::prepare(pqxx::connection_base& connection) {
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

void LedgerHandler::handle(HandlerContext& ctx) {
    Payment p = parse(ctx.json());
    if (p.amount > max_amount_)
        throw PermanentError("payment amount " + std::to_string(p.amount) +
                             " is above this binding's max_amount " + std::to_string(max_amount_));
    std::int64_t signed_amount = p.type == "CREDIT" ? p.amount : -p.amount;
    // No set_result(): a duplicate needs no answer beyond "already applied", and
    // a stored result would cost an UPDATE per record.
    ctx.transaction().exec_prepared(kApply, p.event_id, p.account_id, p.type, p.amount,
                                    signed_amount, p.sequence_id);
}

}  // namespace exo::handlers
