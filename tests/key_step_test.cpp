// The key step (protocol/steps/keys.hpp), the settling of the keys it found
// repeated (protocol/steps/repeated_keys.hpp) and the batch they work on,
// without servers: which records go on to their claims, which wait for the
// first copy of their key, and how those end.
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/steps/hand_back.hpp"
#include "protocol/steps/keys.hpp"
#include "protocol/steps/repeated_keys.hpp"
#include "scheduling/record_limits.hpp"

using namespace std::chrono_literals;
using exo::Outcome;
using exo::StoredOutcome;

namespace {

exo::PendingRecord record(const std::string& topic, int partition, const std::string& event,
                          std::int64_t offset = 0) {
    exo::PendingRecord p;
    p.record.topic = exo::Topic{topic};
    p.record.partition = exo::Partition{partition};
    p.record.offset = exo::Offset{offset};
    p.record.value = "{\"eventId\":\"" + event + "\"}";
    return p;
}

// The records point at their binding: it outlives every batch of the tests.
const std::vector<exo::BindingConfig>& bindings() {
    static const std::vector<exo::BindingConfig> kBindings = [] {
        exo::BindingConfig b;
        b.topic = "payments";
        b.handler = "ledger";
        b.key = {exo::KeySourceKind::json, "/eventId"};
        return std::vector<exo::BindingConfig>{b};
    }();
    return kBindings;
}

// A batch of (partition, event id, offset) records of "payments", keys derived.
std::unique_ptr<exo::Batch> keyed_batch(
    const std::vector<std::tuple<int, std::string, std::int64_t>>& records) {
    std::vector<exo::PendingRecord> taken;
    for (const auto& [partition, event, offset] : records)
        taken.push_back(record("payments", partition, event, offset));
    auto batch = std::make_unique<exo::Batch>(std::move(taken));
    exo::key_step(*batch, bindings(), 5ms);
    return batch;
}

exo::BatchRecord& at(exo::Batch& batch, std::size_t n) {
    return *(batch.begin() + n);
}

}  // namespace

TEST_CASE(
    "the key step lets a key seen twice in one batch, in its partition or another, await its "
    "first copy without holding anything behind it, and dead-letters a record without a key") {
    std::vector<exo::PendingRecord> taken;
    taken.push_back(record("payments", 0, "a"));
    taken.push_back(record("payments", 0, "a"));  // the same key again
    taken.push_back(record("payments", 0, "b"));  // behind it in its partition
    taken.push_back(record("payments", 1, "c"));
    taken.push_back(record("payments", 1, ""));   // no storable key
    taken.push_back(record("payments", 1, "a"));  // the same key in another partition
    taken.push_back(record("payments", 1, "d"));
    exo::Batch batch(std::move(taken));
    const auto all = bindings();
    exo::key_step(batch, all, 5ms);

    std::vector<std::string_view> fates;
    std::vector<std::string> keys;
    for (const auto& r : batch) {
        fates.push_back(exo::fate_name(r.fate()));
        keys.push_back(r.key);
    }
    CHECK(fates == std::vector<std::string_view>{"pending", "awaits_first", "pending", "pending",
                                                 "dead_letter", "awaits_first", "pending"});
    CHECK(keys == std::vector<std::string>{"a", "a", "b", "c", "", "a", "d"});
    // Both later copies wait for the first, not for each other.
    for (std::size_t later : {1, 5}) {
        const auto* awaits = std::get_if<exo::fate::AwaitsFirst>(&at(batch, later).fate());
        REQUIRE(awaits != nullptr);
        CHECK(awaits->first == &at(batch, 0));
    }
    CHECK(batch.open_claims().empty());  // nothing claimed yet
}

TEST_CASE(
    "a later copy of a key whose first copy settled the key ends as its duplicate, with the "
    "first's stored outcome and result, and both offsets are handed back finished") {
    struct Case {
        const char* name;
        void (*settle)(exo::BatchRecord&);
        StoredOutcome stored;
        std::string result;
    };
    const std::vector<Case> cases{
        {"applied", [](exo::BatchRecord& r) { r.finish(Outcome::applied, "receipt-1"); },
         StoredOutcome::applied, "receipt-1"},
        {"stale", [](exo::BatchRecord& r) { r.finish(Outcome::stale); }, StoredOutcome::stale, ""},
        {"a duplicate of a dead-lettered key (Redis)",
         [](exo::BatchRecord& r) {
             r.finish_duplicate(Outcome::duplicate_redis, StoredOutcome::dead_lettered, "bad");
         },
         StoredOutcome::dead_lettered, "bad"},
        {"a duplicate of an applied key (PostgreSQL)",
         [](exo::BatchRecord& r) {
             r.finish_duplicate(Outcome::duplicate_postgres, StoredOutcome::applied, "receipt-0");
         },
         StoredOutcome::applied, "receipt-0"},
        {"dead-lettered with its dedup row",
         [](exo::BatchRecord& r) {
             r.dead_letter("poison");
             r.finish(Outcome::dead_lettered, "poison");  // what the dead-letter step stores
         },
         StoredOutcome::dead_lettered, "poison"},
    };
    for (const auto& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        // The later copy in the first's partition, and in another: the key is the group's.
        auto batch = keyed_batch({{0, "a", 10}, {0, "a", 11}, {0, "b", 12}, {1, "a", 20}});
        c.settle(at(*batch, 0));
        at(*batch, 2).finish(Outcome::applied);
        exo::settle_repeated_keys(*batch);
        for (std::size_t n : {1, 3}) {
            const auto& later = at(*batch, n);
            CHECK(later.is_finished());
            CHECK(later.outcome() == Outcome::duplicate_in_batch);
            CHECK(later.stored() == c.stored);
            CHECK(later.result() == c.result);
            CHECK_FALSE(later.token);  // it never claimed: nothing to complete or release
        }
        exo::PipelineStats stats({"payments"});
        const auto back = exo::hand_back(*batch, stats);
        CHECK(back.requeue.empty());
        CHECK(back.finished.size() == 4);
        CHECK(stats.duplicates_in_batch == 2);
    }
}

TEST_CASE(
    "a later copy of a key whose first copy did not settle the key is requeued at once, as if it "
    "had waited for the next batch, and its offset is not handed back finished") {
    struct Case {
        const char* name;
        void (*leave)(exo::BatchRecord&);
    };
    const std::vector<Case> cases{
        {"requeued (a retry, a NACK, a failed batch)",
         [](exo::BatchRecord& r) { r.requeue(300ms, "retry"); }},
        {"parked for a sequence gap", [](exo::BatchRecord& r) { r.park(200ms, "gap"); }},
        {"a dead letter not recorded yet", [](exo::BatchRecord& r) { r.dead_letter("poison"); }},
        {"dead-lettered without a dedup row (a gap timeout)",
         [](exo::BatchRecord& r) {
             r.dead_letter("gap timed out", /*record_key=*/false, /*clears_gap=*/true);
             r.finish(Outcome::dead_lettered);
         }},
    };
    for (const auto& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        auto batch = keyed_batch({{0, "a", 10}, {1, "a", 20}, {1, "b", 21}});
        c.leave(at(*batch, 0));
        at(*batch, 2).finish(Outcome::applied);  // the record behind the later copy went on
        exo::settle_repeated_keys(*batch);
        const auto& later = at(*batch, 1);
        CHECK(std::holds_alternative<exo::fate::Requeue>(later.fate()));
        CHECK(std::get<exo::fate::Requeue>(later.fate()).delay == 0ms);
        CHECK_FALSE(later.outcome());
        // What the dead-letter step leaves of a letter it could not record.
        if (at(*batch, 0).is_dead_letter()) at(*batch, 0).requeue(0ms, "not recorded this time");
        exo::PipelineStats stats({"payments"});
        const auto back = exo::hand_back(*batch, stats);
        bool later_finished = false;
        for (const auto& f : back.finished)
            later_finished |= f.partition.partition.value == 1 && f.offset.value == 20;
        CHECK_FALSE(later_finished);  // partition 1 commits no further than offset 20
        CHECK(stats.duplicates_in_batch == 0);
    }
}

TEST_CASE(
    "a later copy of a key in the batch whose payload differs from the one its first copy "
    "applied is requeued at once for its own claim to decide (on_key_reuse), and a byte-identical "
    "one ends as the first's duplicate") {
    std::vector<exo::PendingRecord> taken;
    taken.push_back(record("payments", 0, "a", 10));
    taken.push_back(record("payments", 0, "a", 11));  // the same bytes: a redelivery
    taken.push_back(record("payments", 0, "a", 12));
    taken.back().record.value = R"({"eventId":"a","account":"other"})";  // a reused id
    exo::Batch batch(std::move(taken));
    exo::key_step(batch, bindings(), 5ms);
    REQUIRE(at(batch, 0).fingerprint.size() == 32);
    CHECK(at(batch, 1).fingerprint == at(batch, 0).fingerprint);
    CHECK(at(batch, 2).fingerprint != at(batch, 0).fingerprint);
    at(batch, 0).finish(Outcome::applied);  // keeps its own fingerprint as the row's
    exo::settle_repeated_keys(batch);
    CHECK(at(batch, 1).is_finished());
    CHECK(at(batch, 1).outcome() == Outcome::duplicate_in_batch);
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(batch, 2).fate()));
    CHECK(std::get<exo::fate::Requeue>(at(batch, 2).fate()).delay == 0ms);
    CHECK(at(batch, 2).why().find("payload differs") != std::string::npos);
}

TEST_CASE(
    "a later copy in the batch answered by Redis with the applied copy's fingerprint is compared "
    "with that one, and on_key_reuse ignore computes no fingerprint and compares nothing") {
    auto b = bindings();
    std::vector<exo::PendingRecord> taken;
    taken.push_back(record("payments", 0, "a", 10));
    taken.push_back(record("payments", 0, "a", 11));
    taken.back().record.value = R"({"eventId":"a","account":"other"})";
    const auto fresh = [&taken] {
        std::vector<exo::PendingRecord> copy = taken;
        return std::make_unique<exo::Batch>(std::move(copy));
    };
    auto redis_answered = fresh();
    exo::key_step(*redis_answered, b, 5ms);
    at(*redis_answered, 0)
        .finish_duplicate(Outcome::duplicate_redis, StoredOutcome::applied, "",
                          at(*redis_answered, 0).fingerprint);
    exo::settle_repeated_keys(*redis_answered);
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(*redis_answered, 1).fate()));

    b[0].on_key_reuse = exo::KeyReusePolicy::ignore;
    auto ignored = fresh();
    exo::key_step(*ignored, b, 5ms);
    CHECK(at(*ignored, 0).fingerprint.empty());
    CHECK(at(*ignored, 1).fingerprint.empty());
    at(*ignored, 0).finish(Outcome::applied);
    exo::settle_repeated_keys(*ignored);
    CHECK(at(*ignored, 1).outcome() == Outcome::duplicate_in_batch);
}

TEST_CASE(
    "a record whose headers were dropped for being too many is dead-lettered for that, not for "
    "the key it then lacks, and its handler is never reached") {
    auto b = bindings();
    b[0].key = {exo::KeySourceKind::header, "id"};
    auto p = record("payments", 0, "e-1");
    for (int i = 0; i < 5; ++i) p.record.headers.push_back({"id", "k-" + std::to_string(i)});
    REQUIRE(exo::refuse_excess_headers(p, 4));
    std::vector<exo::PendingRecord> taken;
    taken.push_back(std::move(p));
    exo::Batch batch(std::move(taken));
    exo::key_step(batch, b, 5ms);
    CHECK(at(batch, 0).is_dead_letter());
    CHECK(at(batch, 0).why().find("5 headers") != std::string::npos);
    REQUIRE(at(batch, 0).verdict());
    CHECK_FALSE(at(batch, 0).verdict()->record_key);
}

TEST_CASE(
    "the hand-back refuses a batch that is not settled (a record still pending, awaiting its first "
    "copy, or a dead letter not recorded) and moves nothing out of it, rather than requeue such "
    "a record silently") {
    exo::PipelineStats stats({"payments"});
    auto unsettled = keyed_batch({{0, "a", 10}, {0, "a", 11}});
    at(*unsettled, 0).finish(Outcome::applied);  // settle_repeated_keys not run
    CHECK_THROWS_AS(exo::hand_back(*unsettled, stats), std::logic_error);

    auto undecided = keyed_batch({{0, "a", 10}, {0, "b", 11}});
    at(*undecided, 0).finish(Outcome::applied);  // offset 11 left pending
    CHECK_THROWS_WITH_AS(exo::hand_back(*undecided, stats),
                         doctest::Contains("offset 11 has no final fate (pending)"),
                         std::logic_error);
    CHECK(at(*undecided, 0).pending.record.value == "{\"eventId\":\"a\"}");  // left as it was

    auto unrecorded = keyed_batch({{0, "a", 10}});
    at(*unrecorded, 0).dead_letter("poison");  // its dead-letter step not run
    CHECK_THROWS_AS(exo::hand_back(*unrecorded, stats), std::logic_error);
}
