#pragma once
// The relay's side of exo_outbox (docs/outbox.md): claim the next rows to
// publish, mark them sent, read the backlog (retention prunes them:
// pg/retention_statements.hpp). Each function
// is one statement in the caller's transaction and throws pqxx exceptions.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/transaction_base>

#include <exo/record.hpp>

namespace exo {

struct OutboxRow {
    std::int64_t id = 0;
    std::string message_id;  // the exo-outbox-id header
    std::string topic;
    std::optional<std::string> key;
    std::string value;
    std::vector<RecordHeader> headers;
    std::string ordering_key;  // hex sha256 of the key ("" without one): with topic, the unit
    std::int64_t seq = 0;      // position in its (topic, key), commit order
};

// Claims up to `limit` rows: the head (lowest pending seq) of up to `limit`
// (topic, key) units, oldest first, each locked FOR UPDATE SKIP LOCKED, and
// behind each head the pending rows of its unit, in seq order. A unit whose
// head another relay holds locked is skipped whole: its later rows are not
// heads while the head is pending, so no two relays ever publish rows of one
// unit at once, and a unit's rows are published in seq order. The locks last
// until the caller's transaction ends (so a relay that dies frees its rows).
// Returned round-robin over the units (each unit's rows in seq order).
std::vector<OutboxRow> claim_outbox_rows(pqxx::transaction_base& tx, int limit);

// Marks rows as sent (retention > 0) or deletes them (retention 0).
void mark_outbox_sent(pqxx::transaction_base& tx, const std::vector<std::int64_t>& ids, bool keep);

struct OutboxBacklog {
    std::int64_t pending = 0;
    std::chrono::milliseconds oldest{0};  // age of the oldest pending row, 0 when none
};
OutboxBacklog outbox_backlog(pqxx::transaction_base& tx);

}  // namespace exo
