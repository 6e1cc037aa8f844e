#pragma once
// SHA-256 from OpenSSL's libcrypto (libpq links it already), not a hand-written
// digest: migration checksums (pg/migrations.hpp) and payload-derived keys
// (core/canonical_json.hpp).
#include <string>
#include <string_view>

namespace exo {

// Lowercase hex SHA-256 (FIPS 180-4) of `bytes`. Thread-safe. Throws
// std::runtime_error only if libcrypto itself fails (it allocates a context).
std::string sha256_hex(std::string_view bytes);

}  // namespace exo
