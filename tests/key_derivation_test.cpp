// Idempotency key derivation and sequence extraction: core/key_derivation.hpp
// and the lazily parsed payload, core/payload.hpp. No servers.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include <exo/errors.hpp>
#include <exo/record.hpp>
#include "config/config.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "core/text.hpp"

using namespace exo;

namespace {

Record record_with(std::string value, std::vector<RecordHeader> headers = {}) {
    Record r;
    r.topic = Topic{"payments"};
    r.partition = Partition{3};
    r.offset = Offset{1234};
    r.value = std::move(value);
    r.headers = std::move(headers);
    return r;
}

KeySource header_key(std::string name) {
    return {KeySourceKind::header, std::move(name)};
}
KeySource json_key(std::string pointer) {
    return {KeySourceKind::json, std::move(pointer)};
}

// The key a JSON pointer binding derives from `value`.
std::string json_key_of(const std::string& pointer, const std::string& value) {
    Record r = record_with(value);
    JsonPayload payload(r.value);
    return derive_idempotency_key(json_key(pointer), r, payload);
}

// The PermanentError message a JSON pointer binding raises for `value`.
std::string json_key_error_of(const std::string& pointer, const std::string& value) {
    try {
        json_key_of(pointer, value);
    } catch (const PermanentError& e) {
        return e.what();
    }
    FAIL("expected a PermanentError for pointer " << pointer << " in " << value);
    return {};
}

std::string header_key_error_of(const Record& r, const std::string& name) {
    JsonPayload payload(r.value);
    try {
        derive_idempotency_key(header_key(name), r, payload);
    } catch (const PermanentError& e) {
        return e.what();
    }
    FAIL("expected a PermanentError for header " << name);
    return {};
}

SequenceConfig sequence_at(std::string entity, std::string value) {
    SequenceConfig c;
    c.entity_pointer = std::move(entity);
    c.value_pointer = std::move(value);
    return c;
}

SequenceValue sequence_of(const std::string& value) {
    JsonPayload payload(value);
    return extract_sequence(sequence_at("/accountId", "/sequenceId"), payload);
}

std::string sequence_error_of(const std::string& value) {
    try {
        sequence_of(value);
    } catch (const PermanentError& e) {
        return e.what();
    }
    FAIL("expected a PermanentError for " << value);
    return {};
}

}  // namespace

TEST_SUITE("JsonPayload") {
    TEST_CASE("a payload that is not JSON is a permanent error naming it") {
        JsonPayload payload("{not json");
        CHECK_THROWS_AS(payload.document(), PermanentError);
        CHECK_THROWS_WITH_AS(payload.at("/a"), doctest::Contains("not valid JSON"), PermanentError);
    }

    TEST_CASE("a pointer to an absent value gives nullptr, a present one its value") {
        JsonPayload payload(R"({"a": {"b": [10, 20]}})");
        REQUIRE(payload.at("/a/b/1") != nullptr);
        CHECK(*payload.at("/a/b/1") == 20);
        CHECK(payload.at("/a/c") == nullptr);
        CHECK(payload.at("/a/b/2") == nullptr);
    }

    TEST_CASE("a malformed JSON pointer is a permanent error, not a JSON library exception") {
        JsonPayload payload(R"({"a": 1})");
        CHECK_THROWS_WITH_AS(payload.at("a"), doctest::Contains("invalid JSON pointer"),
                             PermanentError);
    }
}

TEST_SUITE("idempotency key from a header") {
    TEST_CASE("a present header gives its value as the key") {
        Record r = record_with("{}", {{"other", "x"}, {"idem", "key-17"}});
        JsonPayload payload(r.value);
        CHECK(derive_idempotency_key(header_key("idem"), r, payload) == "key-17");
    }

    TEST_CASE("the first of repeated headers is the key") {
        Record r = record_with("{}", {{"idem", "first"}, {"idem", "second"}});
        JsonPayload payload(r.value);
        CHECK(derive_idempotency_key(header_key("idem"), r, payload) == "first");
    }

    TEST_CASE("a header key does not need the payload to be JSON") {
        Record r = record_with("\x01 binary, not json", {{"idem", "k"}});
        JsonPayload payload(r.value);
        CHECK(derive_idempotency_key(header_key("idem"), r, payload) == "k");
    }

    TEST_CASE("a missing header is a permanent error naming the header") {
        Record r = record_with("{}", {{"other", "x"}});
        CHECK(header_key_error_of(r, "idem").find("'idem'") != std::string::npos);
    }

    TEST_CASE("a header with a null value is a permanent error") {
        Record r = record_with("{}", {{"idem", std::nullopt}});
        CHECK(header_key_error_of(r, "idem").find("empty") != std::string::npos);
    }

    TEST_CASE("a header with an empty value is a permanent error") {
        Record r = record_with("{}", {{"idem", std::string()}});
        CHECK(header_key_error_of(r, "idem").find("empty") != std::string::npos);
    }

    TEST_CASE("header names are matched exactly, not case-insensitively") {
        Record r = record_with("{}", {{"Idem", "k"}});
        header_key_error_of(r, "idem");
    }
}

TEST_SUITE("idempotency key from a JSON pointer") {
    TEST_CASE("a string value is the key as it is") {
        CHECK(json_key_of("/eventId", R"({"eventId": "evt-1"})") == "evt-1");
    }

    TEST_CASE("an integer value is the key in decimal") {
        CHECK(json_key_of("/id", R"({"id": 42})") == "42");
        CHECK(json_key_of("/id", R"({"id": -7})") == "-7");
        CHECK(json_key_of("/id", R"({"id": 0})") == "0");
        CHECK(json_key_of("/id", R"({"id": 9223372036854775807})") == "9223372036854775807");
    }

    // Regression: nlohmann::json's is_number_integer() is also true for unsigned values, so
    // the int64 branch in scalar_text() catches them first and wraps values
    // above INT64_MAX: 18446744073709551615 becomes the key "-1", the same key
    // as the payload {"id": -1}. Two events, one key: the second is dropped as
    // a duplicate.
    TEST_CASE("an integer above INT64_MAX keeps its own decimal key") {
        CHECK(json_key_of("/id", R"({"id": 18446744073709551615})") == "18446744073709551615");
        CHECK(json_key_of("/id", R"({"id": 9223372036854775808})") == "9223372036854775808");
        CHECK(json_key_of("/id", R"({"id": 18446744073709551615})") !=
              json_key_of("/id", R"({"id": -1})"));
    }

    TEST_CASE("a nested pointer reaches into objects and arrays") {
        CHECK(json_key_of("/meta/ids/1", R"({"meta": {"ids": ["a", "b", "c"]}})") == "b");
        CHECK(json_key_of("/a~1b/c~0d", R"({"a/b": {"c~d": "escaped"}})") == "escaped");
    }

    TEST_CASE("a missing value is a permanent error naming the pointer") {
        CHECK(json_key_error_of("/eventId", R"({"id": "x"})").find("/eventId") !=
              std::string::npos);
        CHECK(json_key_error_of("/meta/id", R"({"meta": {}})").find("/meta/id") !=
              std::string::npos);
    }

    TEST_CASE("a pointer through a scalar is a permanent error, not a crash") {
        json_key_error_of("/meta/id", R"({"meta": "flat"})");
        json_key_error_of("/ids/x", R"({"ids": [1, 2]})");
    }

    // Regression: an array index the pointer names may not fit size_t, and
    // nlohmann::json throws json::out_of_range from contains(). Escaping as a
    // non-exo error, it made the worker requeue the batch forever instead of
    // dead-lettering the record.
    TEST_CASE("a pointer index too large for the payload's array is a permanent error") {
        json_key_error_of("/ids/99999999999999999999", R"({"ids": [1, 2]})");
    }

    TEST_CASE("an object value is refused as a key") {
        CHECK(json_key_error_of("/id", R"({"id": {"a": 1}})").find("object") != std::string::npos);
    }

    TEST_CASE("an array value is refused as a key") {
        CHECK(json_key_error_of("/id", R"({"id": [1]})").find("array") != std::string::npos);
    }

    TEST_CASE("a float value is refused as a key, even a whole one") {
        CHECK(json_key_error_of("/id", R"({"id": 1.5})").find("number") != std::string::npos);
        json_key_error_of("/id", R"({"id": 2.0})");
    }

    TEST_CASE("a boolean value is refused as a key") {
        CHECK(json_key_error_of("/id", R"({"id": true})").find("boolean") != std::string::npos);
    }

    TEST_CASE("a null value is refused as a key") {
        CHECK(json_key_error_of("/id", R"({"id": null})").find("null") != std::string::npos);
    }

    TEST_CASE("an empty string is refused as a key") {
        CHECK(json_key_error_of("/id", R"({"id": ""})").find("empty") != std::string::npos);
    }

    TEST_CASE("a payload that is not JSON is a permanent error") {
        CHECK(json_key_error_of("/id", "not json at all").find("not valid JSON") !=
              std::string::npos);
        json_key_error_of("/id", "");
    }
}

TEST_SUITE("idempotency key from coordinates") {
    TEST_CASE("the key is topic/partition/offset") {
        Record r = record_with("not even json");
        JsonPayload payload(r.value);
        CHECK(derive_idempotency_key(KeySource{KeySourceKind::coordinates, ""}, r, payload) ==
              "payments/3/1234");
    }

    TEST_CASE("records at different offsets get different coordinate keys") {
        Record a = record_with("{}");
        Record b = record_with("{}");
        b.offset = Offset{1235};
        JsonPayload pa(a.value), pb(b.value);
        KeySource source{KeySourceKind::coordinates, ""};
        CHECK(derive_idempotency_key(source, a, pa) != derive_idempotency_key(source, b, pb));
    }
}

TEST_SUITE("extract_sequence") {
    TEST_CASE("a string entity and an integer value are extracted") {
        auto s = sequence_of(R"({"accountId": "acc-1", "sequenceId": 7})");
        CHECK(s.entity == "acc-1");
        CHECK(s.sequence == 7);
    }

    TEST_CASE("an integer entity is taken in decimal") {
        auto s = sequence_of(R"({"accountId": 1001, "sequenceId": 1})");
        CHECK(s.entity == "1001");
        CHECK(s.sequence == 1);
    }

    TEST_CASE("sequence zero is accepted") {
        CHECK(sequence_of(R"({"accountId": "a", "sequenceId": 0})").sequence == 0);
    }

    TEST_CASE("nested pointers are followed for both entity and value") {
        JsonPayload payload(R"({"acct": {"id": "x"}, "meta": {"seq": 12}})");
        auto s = extract_sequence(sequence_at("/acct/id", "/meta/seq"), payload);
        CHECK(s.entity == "x");
        CHECK(s.sequence == 12);
    }

    TEST_CASE("a missing entity is a permanent error naming its pointer") {
        CHECK(sequence_error_of(R"({"sequenceId": 1})").find("/accountId") != std::string::npos);
    }

    TEST_CASE("an empty entity is a permanent error") {
        CHECK(sequence_error_of(R"({"accountId": "", "sequenceId": 1})").find("empty") !=
              std::string::npos);
    }

    TEST_CASE("an entity that is neither string nor integer is a permanent error") {
        sequence_error_of(R"({"accountId": {"id": 1}, "sequenceId": 1})");
        sequence_error_of(R"({"accountId": 1.5, "sequenceId": 1})");
        sequence_error_of(R"({"accountId": false, "sequenceId": 1})");
    }

    TEST_CASE("a missing sequence value is a permanent error naming its pointer") {
        CHECK(sequence_error_of(R"({"accountId": "a"})").find("/sequenceId") != std::string::npos);
    }

    TEST_CASE("a negative sequence value is a permanent error") {
        CHECK(sequence_error_of(R"({"accountId": "a", "sequenceId": -1})").find("negative") !=
              std::string::npos);
    }

    TEST_CASE("a sequence value that is not an integer is a permanent error") {
        CHECK(sequence_error_of(R"({"accountId": "a", "sequenceId": "3"})").find("integer") !=
              std::string::npos);
        sequence_error_of(R"({"accountId": "a", "sequenceId": 3.5})");
        sequence_error_of(R"({"accountId": "a", "sequenceId": 3.0})");
        sequence_error_of(R"({"accountId": "a", "sequenceId": true})");
        sequence_error_of(R"({"accountId": "a", "sequenceId": null})");
    }

    TEST_CASE("a sequence value beyond int64 is refused rather than wrapped") {
        sequence_error_of(R"({"accountId": "a", "sequenceId": 18446744073709551615})");
        sequence_error_of(R"({"accountId": "a", "sequenceId": 9223372036854775808})");
    }

    TEST_CASE("a payload that is not JSON is a permanent error") {
        sequence_error_of("][");
    }
}

TEST_CASE("binary idempotency keys are hex-encoded so keys that differ after a NUL stay apart") {
    using exo::stored_key;
    CHECK(stored_key("evt-1") == "evt-1");
    CHECK(stored_key("caf\xc3\xa9") == "caf\xc3\xa9");  // valid UTF-8 is kept
    CHECK(stored_key(std::string("a\0b", 3)) == "binary:610062");
    CHECK(stored_key(std::string("a\0c", 3)) != stored_key(std::string("a\0b", 3)));
    CHECK(stored_key("\xff\x10") == "binary:ff10");  // not UTF-8
    CHECK(stored_key("\xc3") == "binary:c3");        // truncated sequence
}

TEST_CASE("a binary header key becomes its hex form") {
    exo::Record r;
    r.topic = exo::Topic{"t"};
    r.headers.push_back({"id", std::string("\x01\x00\x02", 3)});
    exo::JsonPayload payload(r.value);
    CHECK(exo::derive_idempotency_key({exo::KeySourceKind::header, "id"}, r, payload) ==
          "binary:010002");
}

TEST_CASE("a header key PostgreSQL would refuse is hex-encoded before it is ever claimed") {
    exo::Record r;
    r.topic = exo::Topic{"t"};
    r.headers.push_back({"id", std::string("\xC0\x80"
                                           "abc")});  // overlong NUL
    exo::JsonPayload payload(r.value);
    CHECK(exo::derive_idempotency_key({exo::KeySourceKind::header, "id"}, r, payload) ==
          "binary:c080616263");
}

TEST_CASE("an idempotency key longer than the stored-key limit is refused, naming the limit") {
    exo::Record r;
    r.topic = exo::Topic{"t"};
    r.value = R"({"eventId": ")" + std::string(3200, 'e') + R"("})";
    exo::JsonPayload payload(r.value);
    try {
        exo::derive_idempotency_key({exo::KeySourceKind::json, "/eventId"}, r, payload);
        FAIL("a 3,200-byte key was accepted");
    } catch (const exo::PermanentError& e) {
        CHECK(std::string(e.what()).find("3200 bytes") != std::string::npos);
        CHECK(std::string(e.what()).find("1024") != std::string::npos);
    }
    r.value = R"({"eventId": ")" + std::string(exo::kMaxStoredKeyBytes, 'e') + R"("})";
    exo::JsonPayload at_limit(r.value);
    CHECK(exo::derive_idempotency_key({exo::KeySourceKind::json, "/eventId"}, r, at_limit).size() ==
          exo::kMaxStoredKeyBytes);
}

TEST_CASE("a binary key whose hex form exceeds the limit is refused too") {
    exo::Record r;
    r.topic = exo::Topic{"t"};
    r.headers.push_back({"id", std::string(600, '\xff')});  // 7 + 1200 bytes once encoded
    exo::JsonPayload payload(r.value);
    CHECK_THROWS_AS(exo::derive_idempotency_key({exo::KeySourceKind::header, "id"}, r, payload),
                    exo::PermanentError);
}

TEST_CASE("a sequence entity longer than the stored-key limit is refused") {
    exo::SequenceConfig cfg{"/accountId", "/sequenceId", exo::SequenceMode::strict, {}};
    std::string text = R"({"accountId": ")" + std::string(2000, 'a') + R"(", "sequenceId": 1})";
    exo::JsonPayload payload(text);
    CHECK_THROWS_AS(exo::extract_sequence(cfg, payload), exo::PermanentError);
}
