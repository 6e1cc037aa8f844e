#pragma once
// Deriving a record's idempotency key from its binding (DESIGN.md section 5.1).
// Pure: no I/O. A record without a usable key is bad input: PermanentError with
// the reason (the pipeline dead-letters it), never a guessed key.
#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "core/payload.hpp"
#include "core/record.hpp"

namespace exo {

// Keys are stored as PostgreSQL text, which cuts a value at its first NUL byte
// and refuses invalid UTF-8; two binary keys could then collide. A key that is
// not NUL-free UTF-8 (e.g. a raw 16-byte UUID header) is therefore used as
// "binary:" + lowercase hex; any other key is used as it is.
std::string text_safe(std::string value);

// Throws PermanentError naming what is missing or malformed.
std::string derive_idempotency_key(const KeySource& source, const Record& record,
                                   JsonPayload& payload);

struct SequenceValue {
    std::string entity;
    std::int64_t sequence = 0;
};

// The entity id (string or integer) and sequence number (non-negative integer)
// the binding points at. Throws PermanentError if either is missing or mistyped.
SequenceValue extract_sequence(const SequenceConfig& config, JsonPayload& payload);

}  // namespace exo
