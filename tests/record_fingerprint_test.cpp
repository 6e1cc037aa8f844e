// Key reuse (issue 34 part 2): core/record_fingerprint.hpp. No servers.
// Expected digests computed by Python, not by exo (the first 32 hex digits):
//   hashlib.sha256(b'{"id":"e5","account":"A"}').hexdigest()[:32]
//   hashlib.sha256(json.dumps(d, sort_keys=True, separators=(',', ':')).encode()).hexdigest()[:32]
#include <doctest/doctest.h>

#include <string>

#include "core/record_fingerprint.hpp"

using namespace exo;

namespace {

constexpr const char* kRawDigest = "d252ba292ee513d166267f2b8e054161";
// {"account":"A","id":"e5"}
constexpr const char* kCanonicalWithoutSentAt = "427b6820df9266e5fe4b3e4bafd4e789";
// {"/id":"e5"}: the canonical text of the fields form
constexpr const char* kFieldsId = "6e5a9ce2eee62136614217a8e4a80ed2";

KeySource hash_key(std::vector<std::string> fields, std::vector<std::string> exclude) {
    KeySource k;
    k.kind = KeySourceKind::hash;
    k.hash.fields = std::move(fields);
    k.hash.exclude = std::move(exclude);
    return k;
}

}  // namespace

TEST_CASE("a record's fingerprint is the SHA-256 of its value bytes for keys not hashed") {
    KeySource header;
    header.kind = KeySourceKind::header;
    header.name = "event-id";
    CHECK(record_fingerprint(header, R"({"id":"e5","account":"A"})") == kRawDigest);
    CHECK(record_fingerprint(KeySource{}, R"({"id":"e5","account":"A"})") == kRawDigest);
    // Bytes, not JSON: reordered members are another payload.
    CHECK(record_fingerprint(header, R"({"account":"A","id":"e5"})") != kRawDigest);
}

TEST_CASE("a hash key's fingerprint is the canonical digest without its excluded fields") {
    const auto exclude = hash_key({}, {"/sentAt"});
    CHECK(record_fingerprint(exclude, R"({"sentAt":1,"id":"e5","account":"A"})") ==
          kCanonicalWithoutSentAt);
    CHECK(record_fingerprint(exclude, R"({ "id":"e5", "account":"A", "sentAt": 2 })") ==
          kCanonicalWithoutSentAt);
}

TEST_CASE("a hash key with fields fingerprints only the listed fields, as its key hashes them") {
    const auto fields = hash_key({"/id"}, {});
    CHECK(record_fingerprint(fields, R"({"sentAt":1, "id":"e5","account":"A"})") == kFieldsId);
    // Outside the listed fields: the same event (a redelivery), not a reuse.
    CHECK(record_fingerprint(fields, R"({"id":"e5","account":"B","sentAt":2})") == kFieldsId);
    CHECK(record_fingerprint(fields, R"({"id":"e6","account":"A","sentAt":1})") != kFieldsId);
}

TEST_CASE("a hash key lends its digest as the fingerprint, topic prefix or not") {
    const auto exclude = hash_key({}, {"/sentAt"});
    const std::string value = R"({"sentAt":1,"id":"e5","account":"A"})";
    // The key's own digest (python: the canonical text's sha256), as key derivation makes it.
    const std::string key_digest =
        "427b6820df9266e5fe4b3e4bafd4e7890a5948e3b2cdf64d77bd782761711c70";
    CHECK(record_fingerprint(exclude, value, key_digest) == kCanonicalWithoutSentAt);
    CHECK(record_fingerprint(exclude, value, "payments/" + key_digest) == kCanonicalWithoutSentAt);
    // python: sha256 of {"/id":"e5"}, the fields form's canonical text.
    const std::string fields_digest =
        "6e5a9ce2eee62136614217a8e4a80ed2387333983f0b67860f2ef8e8473194b2";
    CHECK(record_fingerprint(hash_key({"/id"}, {}), value, fields_digest) == kFieldsId);
}

TEST_CASE("a different fingerprint is a reuse that the binding's policy answers") {
    CHECK(key_reuse_verdict("a", "b", KeyReusePolicy::dead_letter) == KeyReuse::dead_letter);
    CHECK(key_reuse_verdict("a", "b", KeyReusePolicy::log) == KeyReuse::log);
    CHECK(key_reuse_verdict("a", "b", KeyReusePolicy::ignore) == KeyReuse::ignore);
}

TEST_CASE("the same fingerprint, or an unknown one, is never a reuse") {
    for (auto policy : {KeyReusePolicy::dead_letter, KeyReusePolicy::log, KeyReusePolicy::ignore}) {
        CHECK(key_reuse_verdict("a", "a", policy) == KeyReuse::none);
        CHECK(key_reuse_verdict("", "a", policy) == KeyReuse::none);  // a row written before 0013
        CHECK(key_reuse_verdict("a", "", policy) == KeyReuse::none);
    }
}

TEST_CASE("the key reuse reason names both fingerprints and the applied copy's coordinates") {
    const AppliedCopy applied{"aaa", "payments", 2, 17};
    CHECK(key_reuse_reason("bbb", applied) ==
          "key reused with a different payload: this copy bbb, the applied one aaa at "
          "payments/2/17");
}
