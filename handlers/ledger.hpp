#pragma once
// The example handler: applies payments to account balances.
// Payload: {"eventId": str, "accountId": str, "type": "CREDIT"|"DEBIT",
//           "amount": int (minor units, >= 0), "sequenceId": int}
// Effects (tables in sql/0002_ledger.sql): the account is created on first
// sight, its balance moves by the signed amount, and one ledger_entries row is
// written. Idempotency and ordering are the framework's job (binding: key
// /eventId, sequence entity /accountId value /sequenceId).
#include "pipeline/handler.hpp"

namespace exo::handlers {

class LedgerHandler final : public Handler {
public:
    void prepare(pqxx::connection_base& connection) override;
    // Throws PermanentError for a payload that is not a valid payment.
    void handle(HandlerContext& ctx) override;
};

}  // namespace exo::handlers
