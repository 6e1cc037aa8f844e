#pragma once
// The example handler: applies payments to account balances.
// Payload: {"eventId": str, "accountId": str, "type": "CREDIT"|"DEBIT",
//           "amount": int (minor units, >= 0), "sequenceId": int}
// Effects (tables in handlers/sql/0002_ledger.sql): the account is created on first
// sight, its balance moves by the signed amount, and one ledger_entries row is
// written. Idempotency and ordering are the framework's job (binding: key
// /eventId, sequence entity /accountId value /sequenceId).
//
// Options (the binding's `options:`): max_amount, the largest amount accepted;
// a larger payment is refused as a PermanentError (dead-lettered). Default: no limit.
#include <cstdint>
#include <limits>

#include <exo/handler.hpp>
#include <exo/options.hpp>

namespace exo::handlers {

class LedgerHandler final : public Handler {
public:
    LedgerHandler() = default;
    // Throws OptionError for a max_amount that is not a whole number >= 0.
    explicit LedgerHandler(const HandlerOptions& options);

    void prepare(pqxx::connection_base& connection) override;
    // Throws PermanentError for a payload that is not a valid payment.
    void handle(HandlerContext& ctx) override;

private:
    std::int64_t max_amount_ = std::numeric_limits<std::int64_t>::max();
};

}  // namespace exo::handlers
