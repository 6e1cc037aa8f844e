#pragma once
// The SQL of retention (docs/design.md#retention): one chunk of expired rows
// of one table deleted per call, in the caller's transaction, and how far
// behind retention is. Each function is one statement (prune_outbox_keys: two)
// and throws pqxx exceptions.
//
// A chunk is the oldest `limit` expired rows, found through the index on the
// row's timestamp and deleted by ctid (a TID scan): its cost is the rows it
// deletes, however large the table or the backlog. Every statement re-checks
// the expiry on the row it deletes, so a row a concurrent transaction changed
// meanwhile is re-judged on its new version, not on what the chunk's search saw.
//
// Why a btree (consumer_group, processed_at) and not a BRIN on processed_at,
// which costs nothing per insert (the btree: about 100 bytes of WAL per dedup
// row, 726 -> 625 without it): a BRIN cannot give a group's oldest rows, only
// the block ranges that may hold expired rows of any group, so each chunk reads
// and sorts every expired row of every group (1.1M rows, 4 groups: 7,900 pages
// for a chunk of 5,000, against the btree's 460). Worse, the table is a queue:
// once VACUUM frees the pruned pages, new rows fill them, every such range then
// spans old and new times and matches any cutoff, and a chunk reads the whole
// table. retention_lag's min() becomes a scan of the whole table too.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <pqxx/transaction_base>

namespace exo {

// Dedup rows of `group` processed longer than `retention` ago.
std::size_t prune_processed(pqxx::transaction_base& tx, const std::string& group,
                            std::chrono::hours retention, int limit);

// Strict-sequence gap sightings of `group` first seen longer than `retention`
// ago (records long since applied or dead-lettered).
std::size_t prune_gaps(pqxx::transaction_base& tx, const std::string& group,
                       std::chrono::hours retention, int limit);

// Sent outbox rows of `group` written longer than `retention` ago (0: every
// sent row), and sent rows from before rows had a group (''). A pending row
// (one with an exo_outbox_pending row) is never expired.
std::size_t prune_outbox(pqxx::transaction_base& tx, const std::string& group,
                         std::chrono::hours retention, int limit);

// Replay tickets of `group` requested longer than `retention` ago that are
// finished (the key has a dedup row again) or were produced (the daemon had
// the whole retention to process the copy). A pending ticket, a replay still
// owed (nothing produced, no row), is kept whatever its age.
std::size_t prune_replays(pqxx::transaction_base& tx, const std::string& group,
                          std::chrono::hours retention, int limit);

// The recorded digests of `group`'s dead letters (exo_dead_letters) written
// before the retention, oldest first, at most `limit`. Kept as long as the
// dedup rows: a letter older than that is replayed only with --trust-unverified.
std::size_t prune_dead_letters(pqxx::transaction_base& tx, const std::string& group,
                               std::chrono::hours retention, int limit);

// The seq counters of `group` in exo_outbox_keys are swept in primary-key order, `limit`
// counters per call, from just after `after` (empty topic: from the start).
struct KeySweep {
    std::string topic;             // the last counter looked at
    std::string ordering_key_hex;  // its ordering key, hex
    std::size_t scanned = 0;       // fewer than the limit: the sweep reached the end
    std::size_t deleted = 0;
};

// A counter goes when its unit has no pending row left and it was last drawn
// from longer than `idle` (at least the outbox retention) ago, so every row of
// the unit is past retention; its unit's seq then restarts at 1, which is
// right because no pending row of the unit remains to be ordered against.
// Two statements in the caller's transaction (READ COMMITTED): the idle
// counters of the range are locked FOR UPDATE SKIP LOCKED (a writer holding
// one is skipped), then deleted if, in the second statement's newer snapshot,
// their unit still has no pending row. A writer locks its counter before it
// inserts rows of the unit, so once the counter is locked no row of the unit
// can be in flight: the second snapshot sees every pending row there is. One
// statement could not promise that: its re-check after a lock wait sees the
// counter's new version but still the old snapshot's rows.
KeySweep prune_outbox_keys(pqxx::transaction_base& tx, const std::string& group,
                           const KeySweep& after, std::chrono::hours idle, int limit);

// How long the oldest expired row of each table has been expired (0: none
// is); the counters of exo_outbox_keys have no such age and are left out.
struct RetentionLag {
    std::chrono::milliseconds processed{0};
    std::chrono::milliseconds gaps{0};
    std::chrono::milliseconds outbox{0};
    std::chrono::milliseconds replays{0};
    std::chrono::milliseconds dead_letters{0};
};
RetentionLag retention_lag(pqxx::transaction_base& tx, const std::string& group,
                           std::chrono::hours dedup_retention, std::chrono::hours outbox_retention);

}  // namespace exo
