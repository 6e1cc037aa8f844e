#pragma once
// The example handlers: apply payments to account balances.
// Payload: {"eventId": str, "accountId": str, "type": "CREDIT"|"DEBIT",
//           "amount": int (minor units, >= 0), "sequenceId": int}
// Effects (tables in handlers/sql/0002_ledger.sql): the account is created on first
// sight, its balance moves by the signed amount, and one ledger_entries row is
// written. Idempotency and ordering are the framework's job (binding: key
// /eventId, sequence entity /accountId value /sequenceId).
//
// Two handlers, the same effects to the cent:
//  - LedgerHandler ("ledger"), a BatchHandler: a whole batch in one statement
//    (one multi-row upsert of the balances, one multi-row insert of the entries).
//  - LedgerRecordHandler ("ledger_per_record"): one statement per payment; the
//    per-record API, kept as its example and as the benchmark's comparison.
//
// Both emit, through the outbox (exo/outbox.hpp), one record per applied payment
// to the topic `applied_topic` (default "ledger.applied"), keyed by account, its
// value the payment as it came (the same JSON): published once per
// payment after its transaction committed, in commit order per account.
//
// Options (the binding's `options:`): max_amount, the largest amount accepted;
// a larger payment is refused as a PermanentError (dead-lettered). Default: no
// limit. applied_topic: where the applied payments go; "" emits nothing.
#include <cstdint>
#include <limits>
#include <string>

#include <exo/batch_handler.hpp>
#include <exo/handler.hpp>
#include <exo/options.hpp>

namespace exo::handlers {

// A payment as the handlers accept it. Throws PermanentError for a payload
// that is not a valid payment or is above `max_amount`.
struct Payment {
    std::string event_id;
    std::string account_id;
    std::string type;
    std::int64_t amount = 0;
    std::int64_t sequence_id = 0;

    static Payment parse(const nlohmann::json& doc, std::int64_t max_amount);
    std::int64_t signed_amount() const { return type == "CREDIT" ? amount : -amount; }
};

// Throws OptionError for a max_amount that is not a whole number >= 0.
std::int64_t max_amount_option(const HandlerOptions& options);
// Throws OptionError for an applied_topic that is not a Kafka topic name.
std::string applied_topic_option(const HandlerOptions& options);
inline constexpr const char* kDefaultAppliedTopic = "ledger.applied";

class LedgerHandler final : public BatchHandler {
public:
    LedgerHandler() = default;
    explicit LedgerHandler(const HandlerOptions& options)
        : max_amount_(max_amount_option(options)), applied_topic_(applied_topic_option(options)) {}

    void prepare(pqxx::connection_base& connection) override;
    // A payment that is not valid fails its record alone (BatchRecordFailed
    // with a PermanentError). Balances that would leave bigint fail the batch
    // without an index, so exo runs each payment alone and PostgreSQL names it.
    void handle_batch(BatchContext& ctx) override;

private:
    std::int64_t max_amount_ = std::numeric_limits<std::int64_t>::max();
    std::string applied_topic_ = kDefaultAppliedTopic;
};

class LedgerRecordHandler final : public Handler {
public:
    LedgerRecordHandler() = default;
    explicit LedgerRecordHandler(const HandlerOptions& options)
        : max_amount_(max_amount_option(options)), applied_topic_(applied_topic_option(options)) {}

    void prepare(pqxx::connection_base& connection) override;
    // Throws PermanentError for a payload that is not a valid payment.
    void handle(HandlerContext& ctx) override;

private:
    std::int64_t max_amount_ = std::numeric_limits<std::int64_t>::max();
    std::string applied_topic_ = kDefaultAppliedTopic;
};

}  // namespace exo::handlers
