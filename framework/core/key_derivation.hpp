#pragma once
// Deriving a record's idempotency key from its binding (docs/design.md#key).
// Pure: no I/O. A record without a usable key is bad input: PermanentError with
// the reason (the pipeline dead-letters it), never a guessed key.
#include <cstdint>
#include <string>

#include <exo/record.hpp>
#include "core/key_source.hpp"
#include "core/payload.hpp"
#include "core/sequence_config.hpp"

namespace exo {

// Keys and entities come back in their stored form (core/text.hpp: stored_key),
// so PostgreSQL and Redis can hold them and two different inputs never share one.
//
// Throws PermanentError naming what is missing or malformed, and for a key whose
// stored form exceeds kMaxStoredKeyBytes (it could not be written as a dedup row).
// A hash key is the lowercase hex SHA-256 of canonical_json(record.value, ...)
// (core/canonical_json.hpp), "<topic>/" before it with prefix_topic.
std::string derive_idempotency_key(const KeySource& source, const Record& record,
                                   JsonPayload& payload);

struct SequenceValue {
    std::string entity;
    std::int64_t sequence = 0;
};

// The entity id (string or integer) and sequence number (non-negative integer)
// the binding points at. Throws PermanentError if either is missing or mistyped,
// or if the stored entity exceeds kMaxStoredKeyBytes.
SequenceValue extract_sequence(const SequenceConfig& config, JsonPayload& payload);

}  // namespace exo
