#pragma once
// The relay's side of exo_outbox (docs/outbox.md): claim the next rows to
// publish, mark them sent, park the units that failed, read the backlog
// (retention prunes them: pg/retention_statements.hpp). Each function runs in
// the caller's transaction and throws pqxx exceptions.
#include <chrono>
#include <compare>
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
    std::int64_t seq = 0;      // position in its (group, topic, key), commit order
};

// An ordering unit of one group: (topic, ordering key in hex).
struct OutboxUnit {
    std::string topic;
    std::string ordering_key;
    auto operator<=>(const OutboxUnit&) const = default;
};

struct OutboxClaimLimits {
    int rows = 500;                                     // outbox.batch_size
    std::size_t bytes = std::size_t{16} * 1024 * 1024;  // outbox.max_round_bytes, 1 row at least
};

struct OutboxClaim {
    // Per unit in seq order, round-robin over the units (every unit's first
    // row, then every second row...), values read.
    std::vector<OutboxRow> rows;
    // The units whose rows were taken, with the failures in a row their
    // exo_outbox_units row counts (0: none), in claim order.
    std::vector<std::pair<OutboxUnit, int>> units;
};

// Claims the next rows of `group` to publish, in the caller's transaction
// (docs/outbox.md, "The relay"):
// 1. pages of the group's pending units after `cursor` (then from the start),
//    one index descent each over exo_outbox_pending's unit index (a skip scan),
//    leaving out units parked until later, each with its head (lowest pending
//    seq), and the heads locked FOR UPDATE SKIP LOCKED (a head another relay
//    holds is skipped, and with it its unit: its later rows wait behind the
//    head), until limits.rows units are locked or every pending unit was tried;
// 2. behind each locked head the ids and sizes of its unit's pending rows;
// 3. the values of the rows chosen within limits.rows and limits.bytes,
//    read as bytea (unescaped by libpq, not hex-encoded by the server).
// So a round costs O(units visited + rows taken), whatever the backlog. The
// head locks last until the caller's transaction ends (a relay that dies frees
// its units). `cursor` is moved to the last unit claimed, so the next round
// starts after it and every pending unit gets its turn.
OutboxClaim claim_outbox_rows(pqxx::transaction_base& tx, const std::string& group,
                              const OutboxClaimLimits& limits, OutboxUnit& cursor);

// Marks rows of `group` as sent, deleting their exo_outbox_pending rows, and
// with `keep` false (retention 0) the rows themselves. An id of another group
// is left pending.
void mark_outbox_sent(pqxx::transaction_base& tx, const std::string& group,
                      const std::vector<std::int64_t>& ids, bool keep);

// A unit whose head `row_id` failed to publish, and librdkafka's reason.
struct OutboxUnitFailure {
    OutboxUnit unit;
    std::int64_t row_id = 0;
    std::string reason;
};
struct ParkedUnit {
    OutboxUnit unit;
    int failures = 0;                       // in a row, this one included
    std::chrono::milliseconds retry_in{0};  // until its next attempt
};
// Parks each failed unit until now + its backoff (500 ms doubling per failure
// in a row, at most `max_backoff`), recording the row and reason. Only a relay
// holding the unit's head locked (or the operator command) may call this.
std::vector<ParkedUnit> park_outbox_units(pqxx::transaction_base& tx, const std::string& group,
                                          const std::vector<OutboxUnitFailure>& failures,
                                          std::chrono::milliseconds max_backoff);
// Forgets the failures of units that published again.
void unpark_outbox_units(pqxx::transaction_base& tx, const std::string& group,
                         const std::vector<OutboxUnit>& units);

struct OutboxBacklog {
    std::int64_t pending = 0;
    std::chrono::milliseconds oldest{0};  // age of the oldest pending row, 0 when none
    std::int64_t parked_units = 0;        // units with a failure not yet overcome
};
// The group's backlog without counting its rows: per pending unit (a skip scan)
// its last pending seq minus its first plus one (a unit's pending rows are
// consecutive seqs: rows leave a unit only from its head), and the age of the
// oldest head. O(pending units).
OutboxBacklog outbox_backlog(pqxx::transaction_base& tx, const std::string& group);

}  // namespace exo
