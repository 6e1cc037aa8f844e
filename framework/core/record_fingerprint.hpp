#pragma once
// The fingerprint of a record's payload, kept with its key's dedup row, and the
// verdict when a later copy of the key carries another one (issue 34 part 2, a
// producer reusing an event id for a different event). Pure: no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/key_source.hpp"

namespace exo {

// What a binding does with a later copy of a key whose payload differs from the
// one applied (`on_key_reuse`).
enum class KeyReusePolicy { dead_letter, log, ignore };

// The first 32 lowercase hex digits (128 bits) of the SHA-256 of what
// identifies the event:
// - for `key: { hash: ... }` bindings, of what the key hashed (core/canonical_json.hpp):
//   the listed `fields`, or the payload minus `exclude`. The binding says there
//   what makes an event itself, so a copy that differs elsewhere (a timestamp, a
//   trace id, key order) is a redelivery, never a reuse: the key is its own
//   fingerprint, and a reuse cannot happen.
// - for every other binding, of the value's bytes.
// `derived_key`: the record's idempotency key when already derived. A hash key
// is this very digest, so it is read from the key instead of serialising and
// hashing the payload a second time.
// Thread-safe. Throws PermanentError when a hash binding's payload is not
// canonical JSON (its key could not be derived either, so this is not reached).
std::string record_fingerprint(const KeySource& key, std::string_view value,
                               std::string_view derived_key = {});

// Where the key's applied copy was read from, with its fingerprint.
struct AppliedCopy {
    std::string fingerprint;  // empty: the row has none (written before 0013)
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
};

enum class KeyReuse {
    none,         // a plain duplicate: same payload, or nothing to compare with
    dead_letter,  // reused: dead-letter this copy without a dedup row, counted
    log,          // reused: a warning, then finished as a duplicate, counted
    ignore,       // reused: finished as a plain duplicate, not counted
};

// `stored`: the fingerprint of the applied copy (empty when unknown: old rows,
// a Redis claim completed by an older exo); `this_copy`: this record's. Unknown
// on either side is never a reuse.
KeyReuse key_reuse_verdict(std::string_view stored, std::string_view this_copy,
                           KeyReusePolicy policy);

// The dead-letter reason (and log line) naming both fingerprints and the
// applied copy's coordinates.
std::string key_reuse_reason(std::string_view this_copy, const AppliedCopy& applied);

}  // namespace exo
