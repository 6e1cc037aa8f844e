// A record's lane key under its binding's ordering: scheduling/ordering_key.hpp
// (docs/design.md#ordering-and-concurrency). No servers.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include <exo/record.hpp>
#include "config/config.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "core/text.hpp"
#include "scheduling/ordering_key.hpp"

using namespace exo;

namespace {

Record record_with(std::optional<std::string> key, std::string value) {
    Record r;
    r.topic = Topic{"payments"};
    r.partition = Partition{3};
    r.offset = Offset{1234};
    r.key = std::move(key);
    r.value = std::move(value);
    return r;
}

BindingConfig binding(Ordering ordering) {
    BindingConfig b;
    b.topic = "payments";
    b.handler = "ledger";
    b.key = {KeySourceKind::json, "/event_id"};
    b.ordering = ordering;
    if (ordering == Ordering::entity) b.sequence = SequenceConfig{"/account", "/seq"};
    return b;
}

// What the sequence check stores and locks for this payload.
std::string stored_entity(const BindingConfig& b, const std::string& value) {
    JsonPayload payload(value);
    return extract_sequence(*b.sequence, payload).entity;
}

}  // namespace

TEST_CASE("under partition ordering every record of a partition shares the one empty lane") {
    const auto b = binding(Ordering::partition);
    CHECK(ordering_key(b, record_with("acct-1", R"({"account":"a1","seq":1})")) == "");
    CHECK(ordering_key(b, record_with("acct-2", R"({"account":"a2","seq":1})")) == "");
    CHECK(ordering_key(b, record_with(std::nullopt, "not json")) == "");
}

TEST_CASE("under key ordering the lane is the Kafka record key, not the payload's entity") {
    const auto b = binding(Ordering::key);
    CHECK(ordering_key(b, record_with("acct-1", R"({"account":"a9","seq":1})")) == "acct-1");
    CHECK(ordering_key(b, record_with("acct-2", R"({"account":"a9","seq":1})")) == "acct-2");
    // Kept as Kafka gave it, bytes included: a lane key is never stored anywhere.
    const std::string raw("\x00\xff\x01", 3);
    CHECK(ordering_key(b, record_with(raw, "{}")) == raw);
    // A payload that is not JSON does not matter to key ordering.
    CHECK(ordering_key(b, record_with("acct-1", "not json")) == "acct-1");
}

TEST_CASE("under key ordering records without a key share the partition's empty lane") {
    const auto b = binding(Ordering::key);
    CHECK(ordering_key(b, record_with(std::nullopt, R"({"account":"a1","seq":1})")) == "");
    CHECK(ordering_key(b, record_with(std::nullopt, R"({"account":"a2","seq":1})")) == "");
    CHECK(ordering_key(b, record_with("", R"({"account":"a1","seq":1})")) == "");
}

TEST_CASE("under entity ordering the lane is the sequence entity in the form the check locks") {
    const auto b = binding(Ordering::entity);
    SUBCASE("a string entity, whatever the Kafka key") {
        const std::string value = R"({"account":"acct-7","seq":3})";
        CHECK(ordering_key(b, record_with("k1", value)) == "acct-7");
        CHECK(ordering_key(b, record_with(std::nullopt, value)) == "acct-7");
        CHECK(ordering_key(b, record_with("k1", value)) == stored_entity(b, value));
    }
    SUBCASE("an integer entity, in decimal, sharing the lane of the same string") {
        const std::string value = R"({"account":42,"seq":3})";
        CHECK(ordering_key(b, record_with("k1", value)) == "42");
        CHECK(ordering_key(b, record_with("k1", value)) == stored_entity(b, value));
        CHECK(ordering_key(b, record_with("k2", R"({"account":"42","seq":4})")) == "42");
    }
    SUBCASE("an unsigned entity beyond int64 is not read as a negative one") {
        const std::string value = R"({"account":18446744073709551615,"seq":3})";
        CHECK(ordering_key(b, record_with("k1", value)) == "18446744073709551615");
        CHECK(ordering_key(b, record_with("k1", value)) == stored_entity(b, value));
    }
    SUBCASE("a string the stored form escapes gets its escaped form, as the lock does") {
        const std::string value = R"({"account":"binary:ab","seq":3})";
        CHECK(ordering_key(b, record_with("k1", value)) != "binary:ab");
        CHECK(ordering_key(b, record_with("k1", value)) == stored_entity(b, value));
    }
}

TEST_CASE("under entity ordering an unreadable entity gives the empty lane and never throws") {
    const auto b = binding(Ordering::entity);
    for (const char* value : {
             "not json", "", "[1,2]", "42", "null",
             R"({"seq":3})",                       // no entity
             R"({"account":"","seq":3})",          // empty entity
             R"({"account":{"id":1},"seq":3})",    // not a scalar
             R"({"account":1.5,"seq":3})",         // a float has no one text form
             R"({"account":"acct-7"})",            // no sequence number
             R"({"account":"acct-7","seq":-1})",   // a negative one
             R"({"account":"acct-7","seq":"3"})",  // a mistyped one
         }) {
        CAPTURE(value);
        std::string key = "unset";
        CHECK_NOTHROW(key = ordering_key(b, record_with("k1", value)));
        CHECK(key == "");
    }
    // An entity too long to store is refused by the sequence check, so it gets no lane of its own.
    const std::string long_entity =
        R"({"account":")" + std::string(kMaxStoredKeyBytes + 1, 'a') + R"(","seq":3})";
    CHECK(ordering_key(b, record_with("k1", long_entity)) == "");
    // Without a sequence (the config parser refuses it) there is no entity to read.
    auto no_sequence = b;
    no_sequence.sequence.reset();
    CHECK(ordering_key(no_sequence, record_with("k1", R"({"account":"acct-7","seq":3})")) == "");
}
