#pragma once
// The record `exo dlq replay` re-produces, built from a dead letter (section 6.2
// of docs/design.md says what one carries) or, when the dead letter had to leave
// its value out, from the original record itself. Pure: no I/O.
#include <cstdint>
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
// (exo-key-omitted: its size and SHA-256, pipeline/dead_letter.hpp). True when
// the letter left no key out.
bool omitted_key_matches(const Record& dead_letter, const Record& original);

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
