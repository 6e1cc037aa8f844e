#pragma once
// exo's outcome vocabulary. Two questions have two answers, kept apart:
//   - what became of one *delivery* of a record (Outcome): counted, logged,
//     exported as metrics, and what lets its offset be committed;
//   - what is durably known about its idempotency *key* (StoredOutcome): the
//     dedup row's `outcome` column, and the Redis claim's final state.
// A delivery of a key already settled is a duplicate, whatever that key's
// stored outcome; the stored outcome then says what the first delivery did.
// (A record's progress through a batch, pending → finished / requeued /
// parked / dead letter, is its Fate: protocol/batch_record.hpp.)
#include <array>
#include <optional>
#include <string_view>

namespace exo {

enum class Outcome {
    applied,             // the handler ran and its transaction committed
    duplicate_redis,     // the Redis claim was settled already: nothing ran
    duplicate_postgres,  // the dedup row existed already: rolled back, nothing ran
    duplicate_in_batch,  // a later copy of a key in one batch: ends as the first copy did
    stale,               // the sequence is not newer than the entity's: recorded, no effect
    dead_lettered,       // recorded as a dead letter now, and produced to its topic
};
inline constexpr std::array kOutcomes{Outcome::applied,
                                      Outcome::duplicate_redis,
                                      Outcome::duplicate_postgres,
                                      Outcome::duplicate_in_batch,
                                      Outcome::stale,
                                      Outcome::dead_lettered};
// "applied", "duplicate_redis", ...: log and metric label values.
const char* to_string(Outcome outcome);

enum class StoredOutcome {
    applied,        // APPLIED: the handler's effect committed with the row
    stale,          // STALE: nothing applied, the sequence was old
    dead_lettered,  // DEAD_LETTERED: never applied; the reason is the stored result
};
// The dedup row's spelling: "APPLIED", "STALE", "DEAD_LETTERED".
const char* to_sql(StoredOutcome outcome);
// The reverse of to_sql; nullopt for anything else (a row written by a newer exo).
std::optional<StoredOutcome> parse_stored_outcome(std::string_view text);

}  // namespace exo
