#pragma once
// What the operator commands (`exo inspect`, `exo dlq list|replay`) read and
// report, as plain values: the queries fill them, ops_report.hpp prints them.
// Pure data; times are ISO 8601 UTC text as PostgreSQL formats them.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace exo {

// A row of exo_processed.
struct DedupRow {
    std::string outcome;  // APPLIED, STALE or DEAD_LETTERED
    std::string processed_at;
    std::string topic;
    int partition = 0;
    std::int64_t offset = 0;
    std::int64_t fencing_token = 0;
    std::optional<std::string> result;      // the handler's result or the dead-letter reason
    std::optional<std::string> applied_by;  // NULL: written before migration 0004
    // The applied copy's record_fingerprint() (core/record_fingerprint.hpp); NULL:
    // written before migration 0013.
    std::optional<std::string> fingerprint{};
};

// The Redis claim of a key (docs/design.md#redis-claim-record-and-scripts).
struct ClaimView {
    std::string redis_key;
    std::string state;  // PROCESSING, COMPLETED or DEAD_LETTERED
    std::string owner;
    std::string token;
    std::string result;
    std::optional<std::int64_t> lease_until_ms;  // PROCESSING only: Redis time
    std::int64_t ttl_ms = -1;                    // -1: no expiry
};

// The entity's sequence state, for a key of a binding with a sequence.
struct SequenceView {
    std::string handler;
    std::optional<std::string> entity;  // nullopt: the record could not be read
    std::optional<std::int64_t> last_sequence;
    std::string note;  // why the entity or its sequence is unknown, if it is
};

// A replay ticket of exo_replays, with how far it got.
struct ReplayTicket {
    std::string topic;
    int partition = 0;
    std::int64_t offset = 0;
    std::string reason;
    std::string dead_lettered_at;
    std::string requested_at;
    std::optional<std::string> produced_at;
    std::optional<std::string> produced_to;
    // The outcome of the key's dedup row if one exists again: the replay finished.
    std::optional<std::string> finished_outcome;
};

struct InspectReport {
    std::string group;
    std::string key;
    std::optional<DedupRow> row;
    // False with claim.store: postgres: no claim exists anywhere, Redis is not
    // asked, and the dedup row is all there is to show.
    bool claims_in_redis = true;
    std::optional<ClaimView> claim;
    // Set when Redis could not be asked: the claim is unknown, the row still
    // decides (Redis is only the efficiency fence).
    std::optional<std::string> claim_error;
    std::optional<SequenceView> sequence;
    std::optional<ReplayTicket> replay;
    bool known() const { return row.has_value() || replay.has_value(); }
};

// One line of `exo dlq list`: a dead letter the group produced and has not
// settled, or a replay not yet processed.
enum class DeadLetterState {
    dead_lettered,   // its DEAD_LETTERED row: replay it to process it once more
    replay_pending,  // replay asked, the record not yet re-produced: replay again
    replay_sent,     // re-produced; the daemon has not processed it yet
    // Only the dead letter remembers it: the key has no dedup row (a strict
    // sequence's gap timeout). Replay opens a ticket first; the row the daemon
    // inserts when the replayed record applies keeps it exactly once.
    no_dedup_row,
    // The daemon derived no key (missing, malformed or over the stored-key
    // limit): listed by its coordinates; replayed only once its record derives
    // a key under the binding (then exactly once under that key).
    no_key,
};
const char* to_string(DeadLetterState state);

struct DeadLetterEntry {
    std::string key;  // empty for no_key
    DeadLetterState state = DeadLetterState::dead_lettered;
    std::string topic;
    int partition = 0;
    std::int64_t offset = 0;
    std::string reason;
    std::string dead_lettered_at;
    std::optional<std::string> dead_lettered_by;
};

// Which dead letters a command is about.
struct DeadLetterSelection {
    std::optional<std::string> key;                  // --key K
    std::optional<std::int64_t> offset;              // --offset N: the original record's offset
    bool all = false;                                // --all
    std::optional<std::string> entity;               // --entity E: a sequenced entity, in order
    std::optional<std::string> topic;                // --topic T: original topic
    std::optional<int> partition;                    // --partition P: original partition
    std::optional<std::chrono::milliseconds> since;  // --since DURATION
};

// What `exo dlq replay` did with one key.
struct ReplayResult {
    std::string key;
    enum class Status { replayed, would_replay, skipped } status = Status::skipped;
    std::string detail;       // where the record came from, or why it was skipped
    std::string produced_to;  // replayed: "<topic>/<partition>/<offset>"
};
const char* to_string(ReplayResult::Status status);

// `exo sequence advance`: move (handler, entity)'s last sequence to `to`, past
// sequences that will never apply, with an audit row. `exo sequence rewind`
// (backward): move it back to `to`, below a sequence that jumped, with an
// audit row in the same table (from_sequence > to_sequence).
struct SequenceAdvanceRequest {
    // exo_sequences.handler: the handler name, or "<handler>@<group>" for a
    // binding with `sequence.scope: group` (sequence_owner()).
    std::string handler;
    std::string entity;  // as exo stores it
    std::int64_t to = 0;
    std::string reason;
    std::string by;  // who asks
    bool dry_run = false;
    bool backward = false;  // rewind: `to` must be below the entity's last sequence
};

struct SequenceAdvanceResult {
    std::string handler;
    std::string entity;
    std::optional<std::int64_t> from;  // nullopt: the entity had no sequence
    std::int64_t to = 0;
    enum class Status {
        advanced,
        would_advance,
        rewound,
        would_rewind,
        unchanged
    } status = Status::unchanged;
    std::optional<std::int64_t> audit_id;  // advanced: the exo_sequence_advances row
};
const char* to_string(SequenceAdvanceResult::Status status);

}  // namespace exo
