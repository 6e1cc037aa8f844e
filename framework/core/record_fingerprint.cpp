#include "core/record_fingerprint.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

namespace exo {

std::string record_fingerprint(const KeySource& key, std::string_view value) {
    if (key.kind != KeySourceKind::hash) return sha256_hex(value);
    // `fields` keys hash only the listed values: the fingerprint covers the
    // whole payload. `exclude` keys hash the same text the key did.
    HashKeySpec whole;
    whole.exclude = key.hash.exclude;
    return sha256_hex(canonical_json(value, whole));
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
