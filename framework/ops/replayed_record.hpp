#pragma once
// The record `exo dlq replay` re-produces, built from a dead letter
// (docs/design.md#the-dead-letter-record of docs/design.md says what one carries) or, when the dead
// letter had to leave its value out, from the original record itself. Pure: no I/O.
#include <cstdint>
#include <optional>
#include <string>

#include <exo/record.hpp>
#include "core/exo_headers.hpp"  // kReplayedFromHeader
#include "kafka/producer.hpp"

namespace exo {

struct OriginalCoordinates {
    std::string topic;
    int partition = 0;
    std::int64_t offset = 0;
};

// "<topic>/<partition>/<offset>".
std::string to_text(const OriginalCoordinates& at);

// Whether `dead_letter`, a record of a dead-letter topic, is `group`'s dead
// letter of `key` consumed at `at` (its exo-consumer-group, exo-idempotency-key
// and exo-original-* headers, the last of each name: exo's).
bool is_dead_letter_of(const Record& dead_letter, const std::string& group, const std::string& key,
                       const OriginalCoordinates& at);

// Whether the dead letter was sent without the original value (exo-value-omitted).
bool value_omitted(const Record& dead_letter);

// Whether the record at the letter's coordinates has the key the letter left out
// (exo-key-omitted: its size and SHA-256, protocol/dead_letter.hpp). True when
// the letter left no key out.
bool omitted_key_matches(const Record& dead_letter, const Record& original);

// A dead letter read back against what exo recorded when it wrote the record's
// letter (pg/dead_letter_record.hpp): `recorded` is that digest (nullopt: none),
// `digest` the letter's own (dead_letter_digest of its key and value).
enum class LetterCheck {
    verified,    // the same digest: the letter is as exo wrote it
    forged,      // another digest: its key or value was replaced since, or another
                 // letter names the same record
    unrecorded,  // exo recorded no letter of this record (not exo's, or written
                 // before exo recorded digests)
};
LetterCheck check_letter(const std::optional<std::string>& recorded, const std::string& digest);

// What replay says of a letter it will not trust: its idempotency key, the
// dead-lettered record's coordinates and where the letter is, and both digests.
// Printable whatever the letter's bytes.
std::string unverified_letter_text(const std::string& key, const OriginalCoordinates& at,
                                   const Record& letter, const std::optional<std::string>& recorded,
                                   const std::string& digest);

// To the original topic and partition: the dead letter's Kafka key, value and
// headers without the ones the dead-letter step added (and without an earlier
// exo-replayed-from), the record's own exo-* headers under their names again
// (core/exo_headers.hpp), plus exo-replayed-from.
OutgoingRecord replay_of_dead_letter(const Record& dead_letter, const OriginalCoordinates& at);

// The same from the original record, read at its coordinates.
OutgoingRecord replay_of_original(const Record& original);

// The record as the daemon will consume it, for deriving its idempotency key
// before it is produced (the offset is not known yet and left at -1).
Record as_consumed(const OutgoingRecord& record);

}  // namespace exo
