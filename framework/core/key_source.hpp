#pragma once
// Where a binding's idempotency key comes from: the vocabulary shared by the
// config (bindings[].key) and key derivation (core/key_derivation.hpp).
#include <string>

namespace exo {

enum class KeySourceKind { header, json, coordinates };

struct KeySource {
    KeySourceKind kind = KeySourceKind::coordinates;
    std::string name;  // the header name (header) or JSON pointer (json); empty for coordinates
};

}  // namespace exo
