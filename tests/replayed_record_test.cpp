// The record `exo dlq replay` re-produces: ops/replayed_record.hpp. No servers.
#include <doctest/doctest.h>

#include "ops/replayed_record.hpp"
#include "pg/dead_letter_record.hpp"
#include "protocol/dead_letter.hpp"

using namespace exo;

namespace {

Record original() {
    Record r;
    r.topic = Topic{"payments"};
    r.partition = Partition{2};
    r.offset = Offset{17};
    r.key = "account-1";
    r.value = R"({"eventId":"e-1"})";
    r.headers = {{"trace", "abc"}, {"id", std::nullopt}};
    return r;
}

// The dead letter exactly as the daemon produces it, as consumed from the DLQ.
Record dead_letter_of(const Record& r, DeadLetterShape value = DeadLetterShape::original) {
    PendingRecord pending{r};
    pending.attempts = 3;
    OutgoingRecord out = make_dead_letter(pending, "payments.dlq", "billing", "boom", "e-1", value);
    Record d;
    d.topic = Topic{out.topic};
    d.partition = Partition{0};
    d.offset = Offset{4};
    d.key = out.key;
    d.value = out.value;
    d.headers = out.headers;
    return d;
}

}  // namespace

TEST_CASE("a replay of a dead letter is the original record back on its topic and partition") {
    const OriginalCoordinates at{"payments", 2, 17};
    auto out = replay_of_dead_letter(dead_letter_of(original()), at);
    CHECK(out.topic == "payments");
    CHECK(out.partition == 2);
    CHECK(out.key == original().key);
    CHECK(out.value == original().value);
    // ... plus the traceparent its dead letter gained (it had none), so the
    // replay continues the trace its first delivery was logged under.
    REQUIRE(out.headers.size() == 4);
    CHECK(out.headers[0].name == "trace");
    CHECK(out.headers[1].name == "id");
    CHECK_FALSE(out.headers[1].value.has_value());
    CHECK(out.headers[2].name == "traceparent");
    CHECK(out.headers[3].name == kReplayedFromHeader);
    CHECK(out.headers[3].value == "payments/2/17");
}

TEST_CASE("a dead letter is matched by its group, key and all three original coordinates") {
    auto d = dead_letter_of(original());
    CHECK(is_dead_letter_of(d, "billing", "e-1", {"payments", 2, 17}));
    CHECK_FALSE(is_dead_letter_of(d, "audit", "e-1", {"payments", 2, 17}));
    CHECK_FALSE(is_dead_letter_of(d, "billing", "e-2", {"payments", 2, 17}));
    CHECK_FALSE(is_dead_letter_of(d, "billing", "e-1", {"payments", 1, 17}));
    CHECK_FALSE(is_dead_letter_of(d, "billing", "e-1", {"payments", 2, 18}));
    CHECK_FALSE(is_dead_letter_of(d, "billing", "e-1", {"refunds", 2, 17}));
    // Written before exo named the group: it may be another group's.
    std::erase_if(d.headers, [](const RecordHeader& h) { return h.name == "exo-consumer-group"; });
    CHECK_FALSE(is_dead_letter_of(d, "", "e-1", {"payments", 2, 17}));
}

TEST_CASE(
    "a record's forged exo-* headers neither match its dead letter to other coordinates nor "
    "leave the replay: the replay carries them back under their names") {
    Record r = original();
    r.headers = {{"exo-consumer-group", "audit"},
                 {"exo-idempotency-key", "e-2"},
                 {"exo-original-offset", "18"},
                 {"exo-value-omitted", "1"},
                 {"trace", "abc"}};
    auto d = dead_letter_of(r);
    CHECK(is_dead_letter_of(d, "billing", "e-1", {"payments", 2, 17}));
    CHECK_FALSE(is_dead_letter_of(d, "audit", "e-2", {"payments", 2, 18}));
    CHECK_FALSE(value_omitted(d));
    auto out = replay_of_dead_letter(d, {"payments", 2, 17});
    REQUIRE(out.headers.size() == 7);
    for (std::size_t i = 0; i < r.headers.size(); ++i) {
        CHECK(out.headers[i].name == r.headers[i].name);
        CHECK(out.headers[i].value == r.headers[i].value);
    }
}

TEST_CASE("in a letter written before exo renamed a record's exo-* headers, exo's are the last") {
    Record d = dead_letter_of(original());
    // Such a letter carries the record's copies first, then exo's.
    d.headers.insert(d.headers.begin(), {{"exo-idempotency-key", "e-2"},
                                         {"exo-consumer-group", "audit"},
                                         {"exo-original-offset", "18"}});
    CHECK(is_dead_letter_of(d, "billing", "e-1", {"payments", 2, 17}));
    CHECK_FALSE(is_dead_letter_of(d, "audit", "e-2", {"payments", 2, 18}));
}

TEST_CASE("a dead letter sent without its value is recognized, so the original is read instead") {
    CHECK(value_omitted(dead_letter_of(original(), DeadLetterShape::value_omitted)));
    CHECK_FALSE(value_omitted(dead_letter_of(original())));
}

TEST_CASE("replaying a record that was itself replayed keeps one exo-replayed-from") {
    Record r = original();
    r.headers.push_back({kReplayedFromHeader, "payments/2/3"});
    auto out = replay_of_original(r);
    int count = 0;
    for (const auto& h : out.headers)
        if (h.name == kReplayedFromHeader) {
            ++count;
            CHECK(h.value == "payments/2/17");
        }
    CHECK(count == 1);
    CHECK(as_consumed(out).topic.value == "payments");
    CHECK(as_consumed(out).header("trace") != nullptr);
}

TEST_CASE(
    "a dead letter that left a 1 MB key out matches the record at its coordinates by the key's "
    "digest, and no other") {
    Record r = original();
    r.key = std::string(1024 * 1024, 'k');
    const Record d = dead_letter_of(r, DeadLetterShape::digested);
    CHECK_FALSE(d.key.has_value());
    CHECK(value_omitted(d));  // replay reads the record at its coordinates
    CHECK(omitted_key_matches(d, r));
    Record other = r;
    other.key = std::string(1024 * 1024 - 1, 'k') + "x";
    CHECK_FALSE(omitted_key_matches(d, other));
    other.key.reset();
    CHECK_FALSE(omitted_key_matches(d, other));
    // A letter that kept its key matches whatever is there: the key check is replay's.
    CHECK(omitted_key_matches(dead_letter_of(original(), DeadLetterShape::value_omitted), other));
}

TEST_CASE("a letter is verified only by the digest exo recorded writing it") {
    const std::string digest = dead_letter_digest(std::string("account-1"), "v", {});
    CHECK(check_letter(digest, digest) == LetterCheck::verified);
    CHECK(check_letter(dead_letter_digest(std::string("account-1"), "w", {}), digest) ==
          LetterCheck::forged);
    CHECK(check_letter(std::nullopt, digest) == LetterCheck::unrecorded);
}

TEST_CASE(
    "a refused letter is named by its key, its record's coordinates, where it is and both "
    "digests, printable whatever its key") {
    const Record letter = dead_letter_of(original());
    const OriginalCoordinates at{"payments", 2, 17};
    const std::string text =
        unverified_letter_text("e-1\n\x1b[2J", at, letter, std::string("aaaa"), "bbbb");
    CHECK(text.find("key 'e-1\\n\\u001b[2J' (payments/2/17)") != std::string::npos);
    CHECK(text.find("payments.dlq/0/4") != std::string::npos);
    CHECK(text.find("aaaa") != std::string::npos);
    CHECK(text.find("bbbb") != std::string::npos);
    CHECK(text.find('\n') == std::string::npos);
    const std::string none = unverified_letter_text("", at, letter, std::nullopt, "bbbb");
    CHECK(none.find("the keyless record payments/2/17") != std::string::npos);
    CHECK(none.find("not one exo recorded writing") != std::string::npos);
    CHECK(none.find("bbbb") != std::string::npos);
}
