// Fuzzes idempotency key derivation (core/key_derivation.hpp) and the stored form
// of keys (core/text.hpp).
//
// Input: one control byte, then fields separated by 0x1E (fuzz_check.hpp):
//   control   bits 0-1: key source (0 header, 1 json, 2 coordinates, 3 header);
//             bits 2-7: the partition
//   [0] the key source's name: a header name or a JSON pointer
//   [1] the payload
//   [2] the sequence entity pointer, [3] the sequence value pointer
//   [4] the topic (mapped onto the characters Kafka allows)
//   [5...] headers, "name=value" each; a field without '=' is a header with a null value
//
// Invariants:
//   - derive_idempotency_key and extract_sequence throw nothing but PermanentError;
//   - a key or entity is PostgreSQL text, non-empty and at most kMaxStoredKeyBytes;
//   - a key is stored_key() of the header value or JSON scalar it came from, or the
//     record's coordinates; a usable header or JSON value is never refused;
//   - deriving twice from one payload gives the same key;
//   - stored_key() gives PostgreSQL text and is injective (it has an inverse);
//   - printable_text() gives PostgreSQL text within its byte limit.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/errors.hpp>
#include <exo/record.hpp>
#include "config/config.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "core/text.hpp"
#include "fuzz_check.hpp"

namespace {

using exo::fuzz::shown;

constexpr std::string_view kBinaryPrefix = "binary:";

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // stored_key writes lowercase only
}

// The inverse of exo::stored_key: "binary:" + lowercase hex is decoded, anything
// else is the value itself. nullopt if `stored` is not something stored_key writes.
std::optional<std::string> unstored_key(std::string_view stored) {
    if (stored.substr(0, kBinaryPrefix.size()) != kBinaryPrefix) return std::string(stored);
    const std::string_view hex = stored.substr(kBinaryPrefix.size());
    if (hex.size() % 2 != 0) return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int hi = hex_value(hex[i]);
        const int lo = hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
    }
    return out;
}

void check_stored_key(std::string_view value) {
    const std::string stored = exo::stored_key(value);
    FUZZ_CHECK(exo::is_postgres_text(stored),
               "stored_key(" + shown(value) + ") = " + shown(stored) + " is not PostgreSQL text");
    const std::optional<std::string> back = unstored_key(stored);
    FUZZ_CHECK(back && *back == value, "stored_key(" + shown(value) + ") = " + shown(stored) +
                                           " does not decode back to the value");
    if (exo::is_postgres_text(value) && value.substr(0, kBinaryPrefix.size()) != kBinaryPrefix)
        FUZZ_CHECK(stored == value, "stored_key changed the plain text " + shown(value));
}

void check_printable_text(std::string_view value, std::size_t max_bytes) {
    const std::string out = exo::printable_text(value, max_bytes);
    FUZZ_CHECK(exo::is_postgres_text(out),
               "printable_text(" + shown(value) + ") = " + shown(out) + " is not PostgreSQL text");
    FUZZ_CHECK(out.size() <= max_bytes, "printable_text(" + shown(value) + ", " +
                                            std::to_string(max_bytes) + ") is " +
                                            std::to_string(out.size()) + " bytes");
    if (exo::is_postgres_text(value) && value.size() <= max_bytes)
        FUZZ_CHECK(out == value, "printable_text changed the storable text " + shown(value));
}

// Kafka topic names use [a-zA-Z0-9._-] and at most 249 of them.
std::string topic_from(std::string_view field) {
    static constexpr std::string_view kLegal =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    std::string topic;
    for (std::size_t i = 0; i < field.size() && i < 249; ++i)
        topic += kLegal[static_cast<unsigned char>(field[i]) % kLegal.size()];
    return topic.empty() ? std::string("payments") : topic;
}

bool storable(const std::string& stored) {
    return !stored.empty() && exo::is_postgres_text(stored) &&
           stored.size() <= exo::kMaxStoredKeyBytes;
}

// What the binding's JSON pointer designates, as key text, found without
// JsonPayload::at: nullopt when the payload has no usable string or integer there.
std::optional<std::string> json_scalar_text(const exo::Record& record, const std::string& pointer) {
    const auto doc = nlohmann::json::parse(record.value, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return std::nullopt;
    try {
        const nlohmann::json::json_pointer ptr(pointer);
        if (!doc.contains(ptr)) return std::nullopt;
        const nlohmann::json& v = doc.at(ptr);
        if (v.is_string()) return v.get<std::string>();
        if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
        if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    } catch (const nlohmann::json::exception&) {
    }
    return std::nullopt;
}

// The key derive_idempotency_key must return, or nullopt if it must throw.
std::optional<std::string> expected_key(const exo::KeySource& source, const exo::Record& record) {
    switch (source.kind) {
        case exo::KeySourceKind::header: {
            const exo::RecordHeader* h = record.header(source.name);
            if (h == nullptr || !h->value || h->value->empty()) return std::nullopt;
            return exo::stored_key(*h->value);
        }
        case exo::KeySourceKind::json: {
            const std::optional<std::string> text = json_scalar_text(record, source.name);
            if (!text || text->empty()) return std::nullopt;
            return exo::stored_key(*text);
        }
        case exo::KeySourceKind::coordinates:
            return record.topic.value + "/" + std::to_string(record.partition.value) + "/" +
                   std::to_string(record.offset.value);
        case exo::KeySourceKind::hash:
            // Not among kKinds: the canonical form has no second implementation
            // here; tests/canonical_json_test.cpp checks it against Python's.
            break;
    }
    return std::nullopt;
}

// Derives the key once; nullopt if it threw PermanentError.
std::optional<std::string> derive(const exo::KeySource& source, const exo::Record& record,
                                  exo::JsonPayload& payload) {
    try {
        return exo::derive_idempotency_key(source, record, payload);
    } catch (const exo::PermanentError& e) {
        FUZZ_CHECK(std::string_view(e.what()).size() > 0, "a PermanentError without a message");
        return std::nullopt;
    } catch (...) {
        FUZZ_UNEXPECTED_EXCEPTION("derive_idempotency_key", "exo::PermanentError");
    }
}

void check_key(const exo::KeySource& source, const exo::Record& record) {
    exo::JsonPayload payload(record.value);
    const std::optional<std::string> key = derive(source, record, payload);
    const std::optional<std::string> again = derive(source, record, payload);
    FUZZ_CHECK(key == again, "deriving twice from one payload gave " +
                                 shown(key.value_or("(throw)")) + " then " +
                                 shown(again.value_or("(throw)")));

    const std::optional<std::string> expected = expected_key(source, record);
    if (key) {
        FUZZ_CHECK(storable(*key), "the key " + shown(*key) + " (" + std::to_string(key->size()) +
                                       " bytes) is empty, not PostgreSQL text or over " +
                                       std::to_string(exo::kMaxStoredKeyBytes) + " bytes");
        FUZZ_CHECK(expected && *key == *expected, "the key " + shown(*key) +
                                                      " is not the one its source designates, " +
                                                      shown(expected.value_or("(none)")));
    } else {
        // Refusing is right only for a missing, empty, mistyped or oversized value.
        FUZZ_CHECK(!expected || !storable(*expected),
                   "the usable key " + shown(*expected) + " was refused");
    }
}

void check_sequence(const exo::SequenceConfig& config, const exo::Record& record) {
    exo::JsonPayload payload(record.value);
    try {
        const exo::SequenceValue v = exo::extract_sequence(config, payload);
        FUZZ_CHECK(storable(v.entity), "the entity " + shown(v.entity) + " (" +
                                           std::to_string(v.entity.size()) +
                                           " bytes) is empty, not PostgreSQL text or oversized");
        FUZZ_CHECK(v.sequence >= 0, "a negative sequence " + std::to_string(v.sequence));
        const std::optional<std::string> text = json_scalar_text(record, config.entity_pointer);
        FUZZ_CHECK(text && exo::stored_key(*text) == v.entity, "the entity " + shown(v.entity) +
                                                                   " is not the stored form of " +
                                                                   shown(text.value_or("(none)")));
    } catch (const exo::PermanentError&) {
    } catch (...) {
        FUZZ_UNEXPECTED_EXCEPTION("extract_sequence", "exo::PermanentError");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input = exo::fuzz::as_text(data, size);
    check_stored_key(input);
    if (size == 0) return 0;

    const auto control = static_cast<unsigned char>(input[0]);
    check_printable_text(input, 2048);
    check_printable_text(input, control % 64 * 3);
    const std::vector<std::string_view> fields = exo::fuzz::split_fields(input.substr(1), 64);
    auto field = [&](std::size_t i) { return i < fields.size() ? fields[i] : std::string_view{}; };
    // stored_key is injective: two different fields never share a stored form.
    for (std::size_t i = 0; i + 1 < fields.size() && i < 4; ++i) {
        check_stored_key(fields[i]);
        if (fields[i] != fields[i + 1])
            FUZZ_CHECK(exo::stored_key(fields[i]) != exo::stored_key(fields[i + 1]),
                       "stored_key maps " + shown(fields[i]) + " and " + shown(fields[i + 1]) +
                           " to one key");
    }

    exo::Record record;
    record.topic = exo::Topic{topic_from(field(4))};
    record.partition = exo::Partition{control >> 2};
    record.offset = exo::Offset{static_cast<std::int64_t>(size) * 977};
    record.value = std::string(field(1));
    for (std::size_t i = 5; i < fields.size(); ++i) {
        const std::size_t eq = fields[i].find('=');
        if (eq == std::string_view::npos)
            record.headers.push_back({std::string(fields[i]), std::nullopt});
        else
            record.headers.push_back(
                {std::string(fields[i].substr(0, eq)), std::string(fields[i].substr(eq + 1))});
    }

    static constexpr exo::KeySourceKind kKinds[] = {
        exo::KeySourceKind::header, exo::KeySourceKind::json, exo::KeySourceKind::coordinates,
        exo::KeySourceKind::header};
    check_key({kKinds[control & 3], std::string(field(0))}, record);
    check_sequence(
        {.entity_pointer = std::string(field(2)), .value_pointer = std::string(field(3))}, record);
    return 0;
}
