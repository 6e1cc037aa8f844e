#include "core/key_derivation.hpp"

#include <exo/errors.hpp>
#include "core/canonical_json.hpp"
#include "core/sha256.hpp"
#include "core/text.hpp"

namespace exo {
namespace {

// Strings are taken as they are; integers in decimal. Anything else (objects,
// floats, booleans) has no canonical text form, so it is refused rather than
// risk two encodings of one key.
std::optional<std::string> scalar_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    // Unsigned first: is_number_integer() is also true for unsigned values, and
    // reading 2^64-1 as int64 would give "-1", another event's key.
    if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    return std::nullopt;
}

std::string required_text(JsonPayload& payload, const std::string& pointer, const char* what) {
    const nlohmann::json* v = payload.at(pointer);
    if (v == nullptr) throw PermanentError(std::string(what) + ": payload has no " + pointer);
    auto text = scalar_text(*v);
    if (!text)
        throw PermanentError(std::string(what) + ": " + pointer +
                             " must be a string or an integer, not " + v->type_name());
    if (text->empty()) throw PermanentError(std::string(what) + ": " + pointer + " is empty");
    return *text;
}

// The stored form of a key or entity, refused if PostgreSQL's btree could not hold it.
std::string storable(std::string_view value, const char* what) {
    std::string stored = stored_key(value);
    if (stored.size() > kMaxStoredKeyBytes)
        throw PermanentError(std::string(what) + " is " + std::to_string(stored.size()) +
                             " bytes once stored, over the limit of " +
                             std::to_string(kMaxStoredKeyBytes) +
                             ": point the binding at a shorter, unique field");
    return stored;
}

}  // namespace

std::string derive_idempotency_key(const KeySource& source, const Record& record,
                                   JsonPayload& payload) {
    switch (source.kind) {
        case KeySourceKind::header: {
            const RecordHeader* h = record.header(source.name);
            if (h == nullptr)
                throw PermanentError("idempotency key: record has no header '" + source.name + "'");
            if (!h->value || h->value->empty())
                throw PermanentError("idempotency key: header '" + source.name + "' is empty");
            return storable(*h->value, "idempotency key");
        }
        case KeySourceKind::json:
            return storable(required_text(payload, source.name, "idempotency key"),
                            "idempotency key");
        case KeySourceKind::hash: {
            // From the record's bytes, not `payload`: nlohmann::json keeps neither
            // a number's text nor a repeated member name (core/canonical_json.hpp).
            std::string hex = sha256_hex(canonical_json(record.value, source.hash));
            // A topic name has no '/', so "<topic>/<hex>" cannot be another topic's key.
            if (source.hash.prefix_topic) hex = record.topic.value + "/" + hex;
            return storable(hex, "idempotency key");
        }
        case KeySourceKind::coordinates:
            return record.topic.value + "/" + std::to_string(record.partition.value) + "/" +
                   std::to_string(record.offset.value);
    }
    throw PermanentError("idempotency key: unknown key source");
}

SequenceValue extract_sequence(const SequenceConfig& config, JsonPayload& payload) {
    SequenceValue out;
    out.entity = storable(required_text(payload, config.entity_pointer, "sequence entity"),
                          "sequence entity");
    const nlohmann::json* v = payload.at(config.value_pointer);
    if (v == nullptr) throw PermanentError("sequence: payload has no " + config.value_pointer);
    if (!v->is_number_integer())
        throw PermanentError("sequence: " + config.value_pointer + " must be an integer, not " +
                             v->type_name());
    out.sequence = v->get<std::int64_t>();
    if (out.sequence < 0)
        throw PermanentError("sequence: " + config.value_pointer + " is negative (" +
                             std::to_string(out.sequence) + ")");
    return out;
}

}  // namespace exo
