#pragma once
// Sample payments for the `ledger` handler, with duplicates, and the
// exactly-once result they must produce. Used by `exo demo-produce`, the
// integration tests and the benchmark, so all three check the same thing.
//
// Shape: each account's payments carry sequenceId 1, 2, 3... and are keyed by
// account, so they land in one partition in order. A share of the messages are
// re-sends of an earlier payment (same eventId, same payload):
//  - in-stream duplicates, keyed like the original (same partition, later), and
//  - cross-partition duplicates, sent to an explicit other partition after all
//    originals (as a producer failing over to a replayed batch would).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace exo {

struct Payment {
    std::string event_id;
    std::string account_id;
    std::string type;  // CREDIT or DEBIT
    std::int64_t amount = 0;
    std::int64_t sequence_id = 0;
    std::string json() const;
    std::int64_t signed_amount() const { return type == "CREDIT" ? amount : -amount; }
};

struct PaymentMessage {
    Payment payment;
    std::optional<int> partition;  // set for cross-partition duplicates
    bool duplicate = false;
};

struct WorkloadOptions {
    int count = 2000;  // messages in total, duplicates included
    int accounts = 20;
    double duplicate_ratio = 0.1;  // share of messages that are re-sends
    int partitions = 0;            // > 1 enables cross-partition duplicates
    std::uint64_t seed = 42;
    std::string event_prefix = "evt";
};

struct PaymentWorkload {
    std::vector<PaymentMessage> messages;
    std::map<std::string, std::int64_t> expected_balances;
    std::size_t unique_events = 0;
    std::size_t duplicates = 0;
};

PaymentWorkload generate_payments(const WorkloadOptions& options);

}  // namespace exo
