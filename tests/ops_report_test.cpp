// What `exo inspect` and `exo dlq list|replay` print, for people and for
// --json: ops/ops_report.hpp. No servers.
#include <doctest/doctest.h>

#include <algorithm>

#include "ops/ops_report.hpp"

using namespace exo;

namespace {

InspectReport applied_report() {
    InspectReport r;
    r.group = "billing";
    r.key = "e-1";
    r.row = DedupRow{
        "APPLIED",         "2026-01-02T03:04:05.678Z",         "payments", 3, 42, 1700000000000001,
        std::string("ok"), std::string("host-a/123/exo-0.2.0")};
    r.row->fingerprint = "ab12";
    r.claim = ClaimView{
        "exo:billing:e-1", "COMPLETED", "billing@host-a:123:9/w0", "1700000000000001", "ok",
        std::nullopt,      86399000};
    r.sequence = SequenceView{"ledger", std::string("acc-1"), 7, ""};
    return r;
}

}  // namespace

TEST_CASE("inspect as JSON carries every field of the row, the claim and the sequence") {
    auto j = to_json(applied_report());
    CHECK(j["known"] == true);
    CHECK(j["row"]["outcome"] == "APPLIED");
    CHECK(j["row"]["processed_at"] == "2026-01-02T03:04:05.678Z");
    CHECK(j["row"]["topic"] == "payments");
    CHECK(j["row"]["partition"] == 3);
    CHECK(j["row"]["offset"] == 42);
    CHECK(j["row"]["fencing_token"] == 1700000000000001);
    CHECK(j["row"]["result"] == "ok");
    CHECK(j["row"]["applied_by"] == "host-a/123/exo-0.2.0");
    CHECK(j["row"]["fingerprint"] == "ab12");
    CHECK(j["claim"]["state"] == "COMPLETED");
    CHECK(j["claim"]["ttl_ms"] == 86399000);
    CHECK(j["claim"]["lease_until_ms"].is_null());
    CHECK(j["sequence"]["entity"] == "acc-1");
    CHECK(j["sequence"]["last_sequence"] == 7);
    CHECK(j["replay"].is_null());
}

TEST_CASE("inspect as text names the outcome, origin, token, process and claim TTL") {
    auto text = to_text(applied_report());
    CHECK(text.find("outcome: APPLIED") != std::string::npos);
    CHECK(text.find("payments/3/42") != std::string::npos);
    CHECK(text.find("fencing token: 1700000000000001") != std::string::npos);
    CHECK(text.find("applied by: host-a/123/exo-0.2.0") != std::string::npos);
    CHECK(text.find("fingerprint: ab12") != std::string::npos);
    CHECK(text.find("ttl: 86399000 ms") != std::string::npos);
    CHECK(text.find("last sequence: 7") != std::string::npos);
}

TEST_CASE("an unknown key says so, with nulls in JSON and no invented fields") {
    InspectReport r;
    r.group = "g";
    r.key = "nope";
    CHECK_FALSE(r.known());
    auto j = to_json(r);
    CHECK(j["known"] == false);
    CHECK(j["row"].is_null());
    CHECK(j["claim"].is_null());
    CHECK(to_text(r).find("unknown key") != std::string::npos);
}

TEST_CASE("inspect with Redis unreachable says the claim is unknown instead of absent") {
    InspectReport r = applied_report();
    r.claim.reset();
    r.claim_error = "connection refused";
    CHECK(to_json(r)["claim_error"] == "connection refused");
    CHECK(to_text(r).find("claim (Redis): unknown, Redis could not be asked: connection refused") !=
          std::string::npos);
    CHECK(to_text(r).find("outcome: APPLIED") != std::string::npos);
}

TEST_CASE("a pending replay is known and tells the operator to run the replay again") {
    InspectReport r;
    r.key = "k";
    r.replay = ReplayTicket{"payments",   0,           5, "too big", "t0", "t1", std::nullopt,
                            std::nullopt, std::nullopt};
    CHECK(r.known());
    CHECK(to_text(r).find("not yet: run the replay again") != std::string::npos);
}

TEST_CASE("the dead-letter list shows state, origin and reason, and counts") {
    std::vector<DeadLetterEntry> list{
        {"k1", DeadLetterState::dead_lettered, "payments", 1, 9, "amount too big", "t0", "h/1/exo"},
        {"k2", DeadLetterState::replay_pending, "payments", 0, 3, "bad", "t1", std::nullopt}};
    auto text = to_text(list);
    CHECK(text.find("DEAD_LETTERED  payments/1/9  key k1") != std::string::npos);
    CHECK(text.find("reason: amount too big") != std::string::npos);
    CHECK(text.find("REPLAY_PENDING") != std::string::npos);
    CHECK(text.find("2 dead letter(s)") != std::string::npos);
    auto j = to_json(list);
    REQUIRE(j.size() == 2);
    CHECK(j[0]["offset"] == 9);
    CHECK(j[1]["state"] == "REPLAY_PENDING");
    CHECK(j[1]["dead_lettered_by"].is_null());
}

TEST_CASE("replay results say what was done to each key") {
    std::vector<ReplayResult> results{
        {"k1", ReplayResult::Status::replayed, "from its dead letter payments.dlq/0/4",
         "payments/1"},
        {"k2", ReplayResult::Status::skipped, "not dead-lettered: its outcome is APPLIED", ""}};
    auto text = to_text(results);
    CHECK(text.find("replayed k1: from its dead letter payments.dlq/0/4 -> payments/1") !=
          std::string::npos);
    CHECK(text.find("skipped k2") != std::string::npos);
    CHECK(to_json(results)[0]["status"] == "replayed");
    CHECK(to_text(std::vector<ReplayResult>{}) == "nothing to replay\n");
}

TEST_CASE("a dead letter without a key lists as NO_KEY with a dash, and a null key in JSON") {
    std::vector<DeadLetterEntry> entries{
        {"", DeadLetterState::no_key, "payments", 0, 7, "idempotency key: payload has no /eventId",
         "2026-01-02T03:04:05.678Z", std::nullopt},
        {"gap-3", DeadLetterState::no_dedup_row, "payments", 0, 9, "sequence gap",
         "2026-01-02T03:04:06.000Z", std::nullopt}};
    const std::string text = to_text(entries);
    CHECK(text.find("NO_KEY  payments/0/7  key -\n") != std::string::npos);
    CHECK(text.find("NO_DEDUP_ROW  payments/0/9  key gap-3") != std::string::npos);
    auto j = to_json(entries);
    CHECK(j[0]["key"].is_null());
    CHECK(j[0]["state"] == "NO_KEY");
    CHECK(j[1]["key"] == "gap-3");
}

TEST_CASE("a sequence advance says from, to, what it skipped and where the audit row is") {
    SequenceAdvanceResult r{"ledger", "acc-1", 4, 5, SequenceAdvanceResult::Status::advanced, 12};
    const std::string text = to_text(r);
    CHECK(text.find("advanced entity 'acc-1' of handler 'ledger' from 4 to 5 (audit row 12") !=
          std::string::npos);
    CHECK(text.find("sequences 5 to 5 were skipped") != std::string::npos);
    auto j = to_json(r);
    CHECK(j["from"] == 4);
    CHECK(j["status"] == "advanced");
    CHECK(j["audit_id"] == 12);
    r = {"ledger",    "new", std::nullopt, 3, SequenceAdvanceResult::Status::would_advance,
         std::nullopt};
    CHECK(to_text(r).find("from none to 3, skipping sequences 1 to 3 (dry run") !=
          std::string::npos);
    CHECK(to_json(r)["from"].is_null());
}

TEST_CASE("a sequence rewind says from, to, that later sequences apply again, and the audit row") {
    SequenceAdvanceResult r{"ledger@prod",
                            "acc-1",
                            9223372036854775807,
                            41,
                            SequenceAdvanceResult::Status::rewound,
                            13};
    const std::string text = to_text(r);
    CHECK(
        text.find("rewound entity 'acc-1' of handler 'ledger@prod' from 9223372036854775807 to 41 "
                  "(audit row 13 in exo_sequence_advances)") != std::string::npos);
    CHECK(text.find("sequences 42 and above apply again, except keys already applied") !=
          std::string::npos);
    CHECK(to_json(r)["status"] == "rewound");
    r.status = SequenceAdvanceResult::Status::would_rewind;
    r.audit_id = std::nullopt;
    CHECK(to_text(r).find("would rewind entity 'acc-1'") != std::string::npos);
    CHECK(to_json(r)["status"] == "would rewind");
}

TEST_CASE(
    "the text reports escape control characters in keys, topics, reasons and results, so a record "
    "forges no line and drives no terminal") {
    const std::string key = "k\nDEAD_LETTERED  payments/0/1  key innocent\x1b[2J";
    std::vector<DeadLetterEntry> list{{key, DeadLetterState::dead_lettered, "pay\rments", 1, 9,
                                       "bad\n    reason: forged", "t0", std::nullopt}};
    const std::string text = to_text(list);
    CHECK_MESSAGE(std::count(text.begin(), text.end(), '\n') == 3, text);  // entry, reason, count
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find("key k\\nDEAD_LETTERED") != std::string::npos);
    CHECK(to_json(list)[0]["key"] == key);  // JSON keeps the bytes: nlohmann escapes them

    InspectReport r = applied_report();
    r.key = key;
    r.row->result = std::string("ok\x1b]0;title\x07");
    const std::string inspected = to_text(r);
    CHECK(inspected.find('\x1b') == std::string::npos);
    CHECK(inspected.find('\x07') == std::string::npos);
    CHECK(inspected.find("key k\\nDEAD_LETTERED") != std::string::npos);

    const std::string replayed = to_text(std::vector<ReplayResult>{
        {key, ReplayResult::Status::skipped, "refused:\nreplayed innocent: done", ""}});
    CHECK_MESSAGE(std::count(replayed.begin(), replayed.end(), '\n') == 1, replayed);
}
