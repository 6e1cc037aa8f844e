#include "core/record_fingerprint.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

namespace exo {
namespace {

// 128 bits: a fingerprint tells a producer's accidental reuse of an id apart
// from a redelivery, where a collision is 2^-64 even among 2^32 copies of one
// key. Half the hex, written with every dedup row and claim, is 32 bytes less
// per record.
std::string fingerprint_of(std::string_view text) {
    return sha256_hex(text).substr(0, 32);
}

}  // namespace

std::string record_fingerprint(const KeySource& key, std::string_view value,
                               std::string_view derived_key) {
    if (key.kind != KeySourceKind::hash) return fingerprint_of(value);
    // The key is "[<topic>/]<64 hex digits>" of the text hashed below
    // (core/key_derivation.cpp).
    constexpr std::size_t kHexDigits = 64;
    if (derived_key.size() >= kHexDigits)
        return std::string(derived_key.substr(derived_key.size() - kHexDigits, 32));
    return fingerprint_of(canonical_json(value, key.hash));
}

KeyReuse key_reuse_verdict(std::string_view stored, std::string_view this_copy,
                           KeyReusePolicy policy) {
    if (stored.empty() || this_copy.empty() || stored == this_copy) return KeyReuse::none;
    switch (policy) {
        case KeyReusePolicy::dead_letter:
            return KeyReuse::dead_letter;
        case KeyReusePolicy::log:
            return KeyReuse::log;
        case KeyReusePolicy::ignore:
            return KeyReuse::ignore;
    }
    return KeyReuse::dead_letter;
}

std::string key_reuse_reason(std::string_view this_copy, const AppliedCopy& applied) {
    std::string out = "key reused with a different payload: this copy ";
    out.append(this_copy);
    out += ", the applied one ";
    out += applied.fingerprint;
    if (applied.topic.empty()) {
        out += " (its coordinates unknown: Redis answered)";
    } else {
        out += " at " + applied.topic + "/" + std::to_string(applied.partition) + "/" +
               std::to_string(applied.offset);
    }
    return out;
}

}  // namespace exo
