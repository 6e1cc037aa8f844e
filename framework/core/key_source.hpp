#pragma once
// Where a binding's idempotency key comes from: the vocabulary shared by the
// config (bindings[].key) and key derivation (core/key_derivation.hpp).
#include <string>
#include <vector>

namespace exo {

enum class KeySourceKind { header, json, coordinates, hash };

// `key: { hash: ... }`: the key is the SHA-256 of the payload's canonical JSON
// (core/canonical_json.hpp). At most one of `fields` and `exclude` is non-empty
// (the config refuses both); with neither, the whole payload is hashed.
struct HashKeySpec {
    std::vector<std::string> fields;   // JSON pointers: hash only these values
    std::vector<std::string> exclude;  // JSON pointers: hash the payload without these
    bool prefix_topic = false;         // the key is "<topic>/<hex digest>"
};

struct KeySource {
    KeySourceKind kind = KeySourceKind::coordinates;
    std::string name;       // the header name (header) or JSON pointer (json); empty otherwise
    HashKeySpec hash = {};  // hash only
};

}  // namespace exo
