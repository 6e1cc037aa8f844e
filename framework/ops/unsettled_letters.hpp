#pragma once
// The dead letters only Kafka remembers: letters whose key has no dedup row (a
// strict sequence's gap timeout) or that have no key at all (docs/operations.md,
// "Dead letters without a dedup row"). `exo dlq list` reads them back from the
// dead-letter topics and joins them with what PostgreSQL knows of their keys;
// this file is that join. Pure: tested without servers.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <exo/record.hpp>
#include "ops/ops_records.hpp"
#include "ops/replayed_record.hpp"

namespace exo {

// One record of a dead-letter topic, as exo wrote it (protocol/dead_letter.cpp).
struct LetterView {
    std::optional<std::string> key;  // exo-idempotency-key; nullopt: the daemon derived none
    // exo-consumer-group; nullopt: a letter written before exo named its group.
    std::optional<std::string> group;
    OriginalCoordinates at;  // exo-original-topic, -partition, -offset
    // exo-replayed-from: the dead-lettered record was a copy `exo dlq replay`
    // re-produced from these coordinates ("<topic>/<partition>/<offset>").
    std::optional<std::string> replayed_from;
    std::string reason;              // exo-error
    std::int64_t timestamp_ms = -1;  // when Kafka took the dead letter; -1 unknown
    OriginalCoordinates in_dlq;      // where the letter itself is
};

// The last header of each name is read: exo's (core/exo_headers.hpp).
// nullopt if `dead_letter` is not an exo dead letter (an exo-original-* header
// is missing or unreadable), or its key header is not a key exo could have
// stored (then it is read as keyless: the daemon could not have derived it).
std::optional<LetterView> read_letter(const Record& dead_letter);

// The letters naming `group`. Those naming no group (written before exo named
// it, or not by exo) are left out: they may be another group's, and a group
// must not list or replay a letter it cannot tell is its own.
std::vector<LetterView> letters_of_group(std::vector<LetterView> letters, const std::string& group);

// What PostgreSQL says about the letters' keys.
struct LetterStates {
    struct Key {
        std::optional<std::string> outcome;         // of its dedup row, if any
        std::optional<OriginalCoordinates> ticket;  // of its replay ticket, if any
    };
    std::map<std::string, Key> keys;  // a key absent here has neither
    // to_text() of the coordinates of every replay ticket opened for a keyless
    // letter (under the key its record derives now).
    std::set<std::string> ticketed;
};

// The letters the group has not settled, one entry per key (per original
// record for keyless letters), from its latest copy (dead letters are produced
// at least once):
//   keyed, the key has a dedup row    -> none: the row decides (a DEAD_LETTERED
//                                        row is listed from PostgreSQL)
//   keyed, no row, a replay ticket    -> none (the ticket is listed), unless a
//                                        letter is of the ticket's replayed copy:
//                                        the replay was dead-lettered again without
//                                        a row, so no_dedup_row from that letter
//   keyed, no row, no ticket          -> no_dedup_row
//   keyless, a ticket at its record   -> none: replayed under the key it derives now
//   keyless                           -> no_key
std::vector<DeadLetterEntry> unsettled_letters(const std::vector<LetterView>& letters,
                                               const LetterStates& states);

// The whole list: the entries from PostgreSQL, without those of a key the
// letters have an entry for (a ticket superseded by its replay's own dead
// letter), and the letters' entries that pass `selection` (--topic,
// --partition, --offset, --since against `now_ms`), oldest first.
std::vector<DeadLetterEntry> merge_entries(std::vector<DeadLetterEntry> from_postgres,
                                           std::vector<DeadLetterEntry> from_letters,
                                           const DeadLetterSelection& selection,
                                           std::int64_t now_ms);

// Whether a letter without a dedup row is older than the dedup rows'
// retention (postgres.dedup_retention_days): then its key may have been applied
// and its row pruned since, and the absence of a row no longer means the key
// was never decided. An unknown time ("-") counts as older.
bool beyond_retention(const DeadLetterEntry& letter, std::chrono::hours retention,
                      std::int64_t now_ms);

// "2026-11-23T13:44:56.123Z": the form PostgreSQL's times are printed in, so
// both sort together.
std::string iso_utc(std::int64_t epoch_ms);

}  // namespace exo
