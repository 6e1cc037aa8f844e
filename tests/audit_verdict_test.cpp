// `exo audit`'s decision for one record and its tally (ops/audit_verdict.hpp),
// and its flags and ranges (app/audit_options.hpp). No servers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <exo/errors.hpp>
#include "app/arguments.hpp"
#include "app/audit_options.hpp"
#include "ops/audit_verdict.hpp"

using namespace exo;

namespace {

AuditFacts record_at(std::int64_t offset, std::optional<std::int64_t> committed = 100) {
    AuditFacts f;
    f.at = {"payments", 0, offset};
    f.key = "evt-" + std::to_string(offset);
    f.committed = committed;
    return f;
}

AuditRow row(const AuditFacts& f, const std::string& outcome) {
    return {*f.key, outcome, f.at, ""};
}

AuditVerdict verdict(const AuditFacts& f) {
    return classify_record(f).verdict;
}

class Argv {
public:
    Argv(std::initializer_list<std::string> args) : strings_{"exo", "audit"} {
        strings_.insert(strings_.end(), args.begin(), args.end());
        for (auto& s : strings_) pointers_.push_back(s.data());
        pointers_.push_back(nullptr);
    }
    AuditRequest request() {
        Arguments args("audit", static_cast<int>(strings_.size()), pointers_.data(), 2,
                       {"config", "topic", "partition", "from", "to", "chunk"}, {"json"});
        return audit_request(args);
    }

private:
    std::vector<std::string> strings_;
    std::vector<char*> pointers_;
};

}  // namespace

TEST_CASE("a record whose key's dedup row names it is applied or stale as the row says") {
    auto f = record_at(7);
    f.row = row(f, "APPLIED");
    CHECK(verdict(f) == AuditVerdict::applied);
    f.row = row(f, "STALE");
    CHECK(verdict(f) == AuditVerdict::stale);
    // Even past the committed offset: the row is the proof.
    f.committed = 3;
    CHECK(verdict(f) == AuditVerdict::stale);
}

TEST_CASE("a record whose key's dedup row names another record is a duplicate") {
    auto f = record_at(9);
    f.row = AuditRow{*f.key, "APPLIED", {"payments", 1, 4}, ""};
    auto c = classify_record(f);
    CHECK(c.verdict == AuditVerdict::duplicate);
    CHECK(c.why == "its dedup row names payments/1/4");
}

TEST_CASE(
    "a copy of an applied key is a reused key when both fingerprints are known and differ, else a "
    "duplicate, and a letter naming it still accounts for it") {
    const std::string a = "103cd57e210e5859141b189db47ed70e";
    const std::string b = "42ea9f3deaab7108d010b4a76e626452";
    struct Case {
        const char* name;
        std::string row_fingerprint, record_fingerprint;
        bool letter;
        AuditVerdict expected;
    };
    const Case cases[] = {
        {"same fingerprint", a, a, false, AuditVerdict::duplicate},
        {"different fingerprints", a, b, false, AuditVerdict::key_reused},
        {"row's unknown (before 0013, or on_key_reuse ignore)", "", b, false,
         AuditVerdict::duplicate},
        {"record's unknown", a, "", false, AuditVerdict::duplicate},
        {"both unknown", "", "", false, AuditVerdict::duplicate},
        {"different, and a letter names the record", a, b, true, AuditVerdict::dead_lettered},
    };
    for (const auto& c : cases) {
        CAPTURE(c.name);
        auto f = record_at(9);
        f.row = AuditRow{*f.key, "APPLIED", {"payments", 1, 4}, c.row_fingerprint};
        f.fingerprint = c.record_fingerprint;
        f.letter = c.letter;
        CHECK(verdict(f) == c.expected);
    }
    auto f = record_at(9);
    f.row = AuditRow{*f.key, "APPLIED", {"payments", 1, 4}, a};
    f.fingerprint = b;
    const auto c = classify_record(f);
    CHECK(c.why ==
          "key reused with a different payload: this copy " + b + ", the applied one " + a +
              " at payments/1/4; this record's event was never applied and no dead letter holds "
              "it");
}

TEST_CASE("a reused key fails the tally, is counted and listed as a key reused problem") {
    AuditTally t;
    t.count(AuditVerdict::applied);
    t.count(AuditVerdict::key_reused);
    CHECK(t.key_reused == 1);
    CHECK(t.records == 2);
    CHECK_FALSE(t.accounted());
    t.add_problem({{"payments", 0, 3}, "e5", "why", AuditVerdict::key_reused});
    CHECK(problem_line(t.problems[0]) == "key reused payments/0/3 key e5: why\n");
    const auto j = to_json(t);
    CHECK(j["key_reused"] == 1);
    CHECK(j["accounted"] == false);
    CHECK(j["problems"][0]["verdict"] == "key_reused");
    CHECK(to_text(t).find("1 key reused (never applied)") != std::string::npos);
    CHECK(to_text(t).find("NOT everything is accounted for") != std::string::npos);
}

TEST_CASE("a DEAD_LETTERED row is accounted for only with its letter in the dead-letter topic") {
    auto f = record_at(5);
    f.row = row(f, "DEAD_LETTERED");
    f.letter = true;
    CHECK(verdict(f) == AuditVerdict::dead_lettered);
    f.letter = false;
    auto c = classify_record(f);
    CHECK(c.verdict == AuditVerdict::unaccounted);
    CHECK(c.why.find("no letter") != std::string::npos);
    // Past the commit the daemon may still be sending it.
    f.committed = 5;
    CHECK(verdict(f) == AuditVerdict::not_reached);
}

TEST_CASE("a letter naming a record accounts for it without a row, or with another copy's row") {
    auto keyless = record_at(2);
    keyless.key.reset();
    keyless.no_key_reason = "payload is not JSON";
    keyless.letter = true;
    CHECK(verdict(keyless) == AuditVerdict::dead_lettered);
    auto replayed = record_at(3);
    replayed.row = AuditRow{*replayed.key, "APPLIED", {"payments", 0, 40}, ""};
    replayed.letter = true;
    CHECK(verdict(replayed) == AuditVerdict::dead_lettered);
}

TEST_CASE("a record at or past the committed offset without a decision is not reached yet") {
    CHECK(verdict(record_at(100, 100)) == AuditVerdict::not_reached);
    CHECK(verdict(record_at(150, 100)) == AuditVerdict::not_reached);
    CHECK(verdict(record_at(0, std::nullopt)) == AuditVerdict::not_reached);
}

TEST_CASE("a record behind the committed offset with no row and no letter is unaccounted") {
    auto c = classify_record(record_at(99, 100));
    CHECK(c.verdict == AuditVerdict::unaccounted);
    CHECK(c.why.find("key 'evt-99' has no dedup row") != std::string::npos);
    auto keyless = record_at(4);
    keyless.key.reset();
    keyless.no_key_reason = "no header 'id'";
    auto k = classify_record(keyless);
    CHECK(k.verdict == AuditVerdict::unaccounted);
    CHECK(k.why.find("derives no key (no header 'id')") != std::string::npos);
}

TEST_CASE("an outcome exo does not write leaves the record unaccounted") {
    auto f = record_at(1);
    f.row = row(f, "MAYBE");
    CHECK(verdict(f) == AuditVerdict::unaccounted);
}

TEST_CASE("the tally fails on an unaccounted record or a row without its record, and lists them") {
    AuditTally t;
    t.count(AuditVerdict::applied);
    t.count(AuditVerdict::duplicate);
    t.count(AuditVerdict::not_reached);
    CHECK(t.accounted());
    CHECK(t.records == 3);
    t.rows_without_record = 1;
    CHECK_FALSE(t.accounted());
    t.rows_without_record = 0;
    t.count(AuditVerdict::unaccounted);
    CHECK_FALSE(t.accounted());
    const auto j = to_json(t);
    CHECK(j["unaccounted"] == 1);
    CHECK(j["accounted"] == false);
    CHECK(j["key_reused"] == 0);
    CHECK(j["problems"].empty());
}

TEST_CASE("a problem line escapes a key's control characters") {
    const auto line = problem_line({{"payments", 0, 12}, "evt\x1b[31m\n", "why"});
    CHECK(line == "unaccounted payments/0/12 key evt\\u001b[31m\\n: why\n");
}

TEST_CASE("audit flags: --topic is required, offsets are non-negative and in order") {
    auto rq = Argv{"--topic", "payments", "--partition", "2", "--from", "5", "--to", "9", "--json"}
                  .request();
    CHECK(rq.topic == "payments");
    CHECK(rq.partition == 2);
    CHECK(rq.from == 5);
    CHECK(rq.to == 9);
    CHECK(rq.json);
    CHECK_THROWS_WITH_AS((Argv{"--from", "1"}.request()),
                         "exo audit: --topic is required (see exo --help)", UsageError);
    CHECK_THROWS_WITH_AS(
        (Argv{"--topic", "t", "--from", "-1"}.request()),
        "--from must be a record offset (a non-negative integer) or a time in UTC (e.g. "
        "2026-11-28T20:00:00Z), not '-1'",
        UsageError);
    CHECK_THROWS_WITH_AS((Argv{"--topic", "t", "--from", "9", "--to", "5"}.request()),
                         "--from 9 is after --to 5: --to is the last offset audited", UsageError);
    CHECK_THROWS_AS((Argv{"--topic", "t", "--partition", "x"}.request()), UsageError);
    CHECK(Argv{"--topic", "t"}.request().chunk == 5000);
    CHECK(Argv{"--topic", "t", "--chunk", "2"}.request().chunk == 2);
    CHECK_THROWS_WITH_AS((Argv{"--topic", "t", "--chunk", "0"}.request()),
                         "--chunk must be between 1 and 100000 records, not 0", UsageError);
    CHECK_THROWS_AS((Argv{"--topic", "t", "--since", "1h"}.request()), UsageError);
}

TEST_CASE("an audit range outside the partition's offsets is refused naming them") {
    AuditRequest rq;
    rq.topic = "payments";
    auto whole = audit_range(rq, 0, 10, 20);
    CHECK(whole.from == 10);
    CHECK(whole.to == 19);
    auto empty = audit_range(rq, 0, 5, 5);
    CHECK(empty.to < empty.from);
    rq.from = 3;
    CHECK_THROWS_WITH_AS(audit_range(rq, 1, 10, 20),
                         "--from 3 is outside the range: partition 1 of topic 'payments' holds "
                         "offsets 10..19; choose --from within it (records below the start are "
                         "gone: retention or deletion)",
                         UsageError);
    rq.from = 12;
    rq.to = 20;
    CHECK_THROWS_AS(audit_range(rq, 1, 10, 20), UsageError);
    rq.to = 19;
    auto part = audit_range(rq, 1, 10, 20);
    CHECK(part.from == 12);
    CHECK(part.to == 19);
}

TEST_CASE(
    "audit times are ISO 8601 UTC and become each partition's offsets through Kafka's answer") {
    CHECK(parse_utc_time("1970-01-01T00:00:00Z") == 0);
    CHECK(parse_utc_time("2026-11-28T20:00:00Z") == 1795896000000);
    CHECK(parse_utc_time("2024-02-29T00:00:01.250Z") == 1709164801250);
    CHECK_FALSE(parse_utc_time("2023-02-29T00:00:00Z"));
    CHECK_FALSE(parse_utc_time("2026-11-28 20:00:00Z"));
    CHECK_FALSE(parse_utc_time("2026-11-28T20:00:00+01:00"));
    auto rq =
        Argv{"--topic", "t", "--from", "2026-11-28T20:00:00Z", "--to", "2026-11-28T21:00:00.000Z"}
            .request();
    CHECK_FALSE(rq.from);
    CHECK(rq.from_time_ms == 1795896000000);
    CHECK(rq.to_time_ms == 1795899600000);
    CHECK_THROWS_AS(
        (Argv{"--topic", "t", "--from", "2026-11-28T21:00:00Z", "--to", "2026-11-28T20:00:00Z"}
             .request()),
        UsageError);
    // Records 10..19; the first at or after --from is 12, the first after --to is 15.
    auto r = audit_range(rq, 0, 10, 20, {12, 15});
    CHECK(r.from == 12);
    CHECK(r.to == 14);
    // Nothing that late: an empty range, not an error.
    auto none = audit_range(rq, 0, 10, 20, {std::nullopt, std::nullopt});
    CHECK(none.to < none.from);
}

TEST_CASE("records Kafka dropped before the group consumed them are warned about, not failed on") {
    AuditTally t;
    t.topic = "payments";
    t.ranges.push_back({0, 200, 299, 150, 50});
    t.count(AuditVerdict::not_reached);
    CHECK(t.accounted());
    CHECK(to_text(t).find("WARNING: partition 0: 50 record(s) below its first offset were never "
                          "consumed") != std::string::npos);
    CHECK(to_json(t)["ranges"][0]["gone_unconsumed"] == 50);
}
