// Which dead letters only Kafka remembers, joined with what PostgreSQL knows of
// their keys: ops/unsettled_letters.hpp. No servers.
#include <doctest/doctest.h>

#include "ops/unsettled_letters.hpp"
#include "protocol/dead_letter.hpp"

using namespace exo;

namespace {

// A dead letter exactly as the daemon produces it, read back from its topic.
Record letter(const std::string& key, std::int64_t original_offset, std::int64_t dlq_offset,
              std::int64_t timestamp_ms, const std::string& replayed_from = "",
              const std::string& group = "billing") {
    Record r;
    r.topic = Topic{"payments"};
    r.partition = Partition{0};
    r.offset = Offset{original_offset};
    r.value = "{}";
    if (!replayed_from.empty()) r.headers.push_back({"exo-replayed-from", replayed_from});
    PendingRecord pending{r};
    OutgoingRecord out = make_dead_letter(pending, "payments.dlq", group, "gap", key);
    Record d;
    d.topic = Topic{out.topic};
    d.partition = Partition{0};
    d.offset = Offset{dlq_offset};
    d.value = out.value;
    d.headers = out.headers;
    d.timestamp_ms = timestamp_ms;
    return d;
}

std::vector<LetterView> views(const std::vector<Record>& records) {
    std::vector<LetterView> out;
    for (const auto& r : records)
        if (auto l = read_letter(r)) out.push_back(*l);
    return out;
}

}  // namespace

TEST_CASE("a dead letter is read back with its key, origin, reason and replay origin") {
    auto l = read_letter(letter("k-1", 17, 4, 1'700'000'000'123, "payments/0/3"));
    REQUIRE(l.has_value());
    CHECK(l->key == "k-1");
    CHECK(to_text(l->at) == "payments/0/17");
    CHECK(l->replayed_from == "payments/0/3");
    CHECK(l->reason == "gap");
    CHECK(to_text(l->in_dlq) == "payments.dlq/0/4");
    CHECK_FALSE(read_letter(letter("", 1, 1, 1))->key.has_value());
    Record foreign;
    foreign.topic = Topic{"payments.dlq"};
    CHECK_FALSE(read_letter(foreign).has_value());  // not written by exo
}

TEST_CASE("a group sees its own letters, never another group's nor those naming no group") {
    auto named = views({letter("a", 1, 0, 1000, "", "billing"),
                        letter("b", 2, 1, 1000, "", "audit"), letter("", 3, 2, 1000, "", "audit")});
    REQUIRE(named.size() == 3);
    CHECK(named[0].group == "billing");
    auto unnamed = named[1];
    unnamed.group.reset();  // a letter written before exo named its group
    named.push_back(unnamed);
    const auto billing = letters_of_group(named, "billing");
    REQUIRE(billing.size() == 1);
    CHECK(billing[0].key == "a");
    CHECK(letters_of_group(named, "audit").size() == 2);
}

TEST_CASE("a letter is read by exo's headers, the last of each name, not the record's copies") {
    // Written before exo renamed a record's exo-* headers: the copies come first.
    Record r = letter("k-1", 17, 4, 1000);
    r.headers.insert(r.headers.begin(), {{"exo-idempotency-key", "forged"},
                                         {"exo-consumer-group", "audit"},
                                         {"exo-original-topic", "refunds"},
                                         {"exo-error", "forged"}});
    auto l = read_letter(r);
    REQUIRE(l.has_value());
    CHECK(l->key == "k-1");
    CHECK(l->group == "billing");
    CHECK(to_text(l->at) == "payments/0/17");
    CHECK(l->reason == "gap");
}

TEST_CASE("a letter is listed only while its key has neither a dedup row nor a replay of it") {
    auto letters = views({letter("gap-3", 1, 0, 1000), letter("done", 2, 1, 1000),
                          letter("ticketed", 3, 2, 1000), letter("", 4, 3, 1000)});
    LetterStates states;
    states.keys["done"].outcome = "APPLIED";
    states.keys["ticketed"].ticket = OriginalCoordinates{"payments", 0, 3};
    auto entries = unsettled_letters(letters, states);
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].key == "gap-3");
    CHECK(entries[0].state == DeadLetterState::no_dedup_row);
    CHECK(entries[0].offset == 1);
    CHECK(entries[0].dead_lettered_at == "1970-01-01T00:00:01.000Z");
    CHECK(entries[1].key.empty());
    CHECK(entries[1].state == DeadLetterState::no_key);
    CHECK(entries[1].offset == 4);

    states.ticketed.insert("payments/0/4");  // replayed under the key it derives now
    CHECK(unsettled_letters(letters, states).size() == 1);
}

TEST_CASE("copies of one letter, and letters of one key, are listed once from the latest") {
    auto letters = views({letter("k", 5, 0, 1000), letter("k", 5, 1, 1000), letter("k", 9, 2, 2000),
                          letter("", 4, 3, 1000), letter("", 4, 4, 1500)});
    auto entries = unsettled_letters(letters, {});
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].offset == 9);
    CHECK(entries[1].offset == 4);
    CHECK(entries[1].dead_lettered_at == "1970-01-01T00:00:01.500Z");
}

TEST_CASE("the dead letter of a replayed copy supersedes its ticket, an older letter does not") {
    // Gap-timed-out at payments/0/5, replayed to payments/0/9, gap-timed-out again.
    auto letters = views({letter("k", 5, 0, 1000), letter("k", 9, 1, 3000, "payments/0/5")});
    LetterStates states;
    states.keys["k"].ticket = OriginalCoordinates{"payments", 0, 5};
    auto entries = unsettled_letters(letters, states);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].offset == 9);
    CHECK(entries[0].state == DeadLetterState::no_dedup_row);
    // Replayed again from the new letter: the ticket follows it, nothing is listed.
    states.keys["k"].ticket = OriginalCoordinates{"payments", 0, 9};
    CHECK(unsettled_letters(letters, states).empty());
}

TEST_CASE("merging drops a ticket its letter supersedes, filters the letters and sorts by time") {
    DeadLetterEntry row{"row",  DeadLetterState::dead_lettered, "payments",  0, 1,
                        "boom", "2026-01-01T00:00:02.000Z",     std::nullopt};
    DeadLetterEntry ticket{"k",   DeadLetterState::replay_sent, "payments",  0, 5,
                           "gap", "2026-01-01T00:00:01.000Z",   std::nullopt};
    DeadLetterEntry letter_k{"k",   DeadLetterState::no_dedup_row, "payments",  0, 9,
                             "gap", "2026-01-01T00:00:03.000Z",    std::nullopt};
    DeadLetterEntry other{"o",   DeadLetterState::no_dedup_row, "orders",    0, 2,
                          "gap", "2026-01-01T00:00:00.000Z",    std::nullopt};
    auto all = merge_entries({row, ticket}, {letter_k, other}, {}, 0);
    REQUIRE(all.size() == 3);
    CHECK(all[0].key == "o");
    CHECK(all[1].key == "row");
    CHECK(all[2].key == "k");
    CHECK(all[2].state == DeadLetterState::no_dedup_row);

    DeadLetterSelection payments;
    payments.topic = "payments";
    auto only = merge_entries({row}, {letter_k, other}, payments, 0);
    CHECK(only.size() == 2);

    DeadLetterSelection recent;
    recent.since = std::chrono::milliseconds(1500);
    const std::int64_t now = 1767225604000;  // 2026-01-01T00:00:04Z
    auto fresh = merge_entries({}, {letter_k, other}, recent, now);
    REQUIRE(fresh.size() == 1);
    CHECK(fresh[0].key == "k");
}

TEST_CASE("times print as PostgreSQL prints them, in UTC with milliseconds") {
    CHECK(iso_utc(0) == "1970-01-01T00:00:00.000Z");
    CHECK(iso_utc(1767225604007) == "2026-01-01T00:00:04.007Z");
}

TEST_CASE("a letter without a dedup row older than the dedup retention cannot be judged") {
    const std::int64_t now = 1767225604000;  // 2026-01-01T00:00:04Z
    DeadLetterEntry e{"k",   DeadLetterState::no_dedup_row, "payments",  0, 1,
                      "gap", "2025-12-31T00:00:05.000Z",    std::nullopt};
    CHECK_FALSE(beyond_retention(e, std::chrono::hours(24), now));
    e.dead_lettered_at = "2025-12-31T00:00:03.000Z";
    CHECK(beyond_retention(e, std::chrono::hours(24), now));
    e.dead_lettered_at = "-";
    CHECK(beyond_retention(e, std::chrono::hours(24 * 365), now));
}
