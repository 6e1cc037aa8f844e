// A record's state by lifetime (batch_record.hpp): a rolled-back transaction
// try forgets its Decision whole, the batch's fields and the record's history
// stay, and a dead-letter verdict crosses to the next batch only when the batch
// that reached it ends.
#include <doctest/doctest.h>

#include <any>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/steps/hand_back.hpp"

using namespace std::chrono_literals;
using exo::Outcome;
using exo::StoredOutcome;

namespace {

exo::PendingRecord polled(std::int64_t offset) {
    exo::PendingRecord p;
    p.record.topic = exo::Topic{"payments"};
    p.record.partition = exo::Partition{0};
    p.record.offset = exo::Offset{offset};
    p.record.value = R"({"eventId":"e-1"})";
    return p;
}

std::unique_ptr<exo::Batch> batch_of(std::int64_t offset) {
    std::vector<exo::PendingRecord> taken;
    taken.push_back(polled(offset));
    return std::make_unique<exo::Batch>(std::move(taken));
}

exo::BatchRecord& first(exo::Batch& batch) {
    return *batch.begin();
}

// What the batch learned about a record before and around its transaction.
void learn_batch_facts(exo::BatchRecord& r) {
    r.key = "e-1";
    r.fingerprint = "fp-own";
    r.token = exo::FencingToken{7};
    r.redis_said_duplicate = true;
    r.in_transaction = true;
    r.handler_ran = true;
    r.handed_over = std::string("quote-1");
    r.pending.attempts = 2;
    r.pending.nacks = 1;
    r.pending.gap_waits = 3;
}

void check_batch_facts_kept(const exo::BatchRecord& r) {
    CHECK(r.key == "e-1");
    CHECK(r.fingerprint == "fp-own");
    CHECK(r.token == exo::FencingToken{7});
    CHECK(r.redis_said_duplicate);
    CHECK(r.in_transaction);
    CHECK(r.handler_ran);  // a run after the rollback is a rerun
    CHECK(std::any_cast<std::string>(r.handed_over) == "quote-1");
    CHECK(r.pending.attempts == 2);  // a failed try still counted
    CHECK(r.pending.nacks == 1);
    CHECK(r.pending.gap_waits == 3);
}

}  // namespace

TEST_CASE(
    "a rolled-back try forgets every decision it made about a record (fate, stored outcome, "
    "result, stored fingerprint, key reuse, framework start, dead-letter verdict) and keeps what "
    "the batch and the earlier tries learned") {
    struct Case {
        const char* name;
        void (*decide)(exo::BatchRecord&);
    };
    const std::vector<Case> cases{
        {"applied after the set-based start",
         [](exo::BatchRecord& r) {
             r.note_framework_started();
             r.finish(Outcome::applied, "receipt-1");
         }},
        {"a duplicate of a reused key",
         [](exo::BatchRecord& r) {
             r.note_key_reused();
             r.finish_duplicate(Outcome::duplicate_postgres, StoredOutcome::dead_lettered, "bad",
                                "fp-first");
         }},
        {"a dead letter of a reused key",
         [](exo::BatchRecord& r) {
             r.note_key_reused();
             r.dead_letter("another payload under its key", /*record_key=*/false);
         }},
        {"a sequence gap that timed out",
         [](exo::BatchRecord& r) {
             r.note_framework_started();
             r.dead_letter("gap timed out", /*record_key=*/false, /*clears_gap=*/true);
         }},
        {"parked", [](exo::BatchRecord& r) { r.park(250ms, "waiting for sequence 4"); }},
        {"requeued", [](exo::BatchRecord& r) { r.requeue(10ms, "retryable"); }},
    };
    for (const auto& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        auto batch = batch_of(10);
        auto& r = first(*batch);
        learn_batch_facts(r);
        c.decide(r);
        REQUIRE_FALSE(r.decision() == exo::Decision{});

        r.reset_to_pending();

        CHECK(r.decision() == exo::Decision{});  // every field, including any added later
        CHECK(r.is_pending());
        CHECK(r.stored() == StoredOutcome::applied);
        CHECK(r.result().empty());
        CHECK(r.stored_fingerprint().empty());
        CHECK_FALSE(r.key_reused());
        CHECK_FALSE(r.framework_started());
        CHECK_FALSE(r.verdict());
        CHECK(r.why().empty());
        check_batch_facts_kept(r);
        CHECK_FALSE(r.pending.dead_letter);  // nothing carried to the next batch either
    }
}

TEST_CASE(
    "a dead-letter verdict whose dead-letter step failed goes back with the record and is only "
    "recorded in its next batch, while a verdict its try rolled back is not carried") {
    exo::PipelineStats stats({"payments"});
    auto judged = batch_of(10);
    first(*judged).dead_letter("poison");
    first(*judged).requeue(50ms, "the dead-letter step failed");  // DeadLetterPublisher::unrecorded
    auto back = exo::hand_back(*judged, stats);
    REQUIRE(back.requeue.size() == 1);
    REQUIRE(back.requeue[0].dead_letter);
    CHECK(*back.requeue[0].dead_letter == exo::DeadLetterVerdict{"poison", true, false});

    std::vector<exo::PendingRecord> again;
    again.push_back(std::move(back.requeue[0]));
    exo::Batch next(std::move(again));
    first(next).resume_dead_letter();
    CHECK(first(next).is_dead_letter());
    CHECK(first(next).why() == "poison");
    CHECK(first(next).verdict() == exo::DeadLetterVerdict{"poison", true, false});

    auto rolled_back = batch_of(11);
    first(*rolled_back).dead_letter("poison");
    first(*rolled_back).reset_to_pending();  // its transaction aborted
    first(*rolled_back).requeue(50ms, "the batch failed");
    auto retried = exo::hand_back(*rolled_back, stats);
    REQUIRE(retried.requeue.size() == 1);
    CHECK_FALSE(retried.requeue[0].dead_letter);  // its handler runs again
}

TEST_CASE(
    "a verdict a record carried into its batch survives a rollback there, and a committed try "
    "says so") {
    auto batch = batch_of(10);
    auto& r = first(*batch);
    r.pending.dead_letter = exo::DeadLetterVerdict{"too many headers", false, false};
    r.reset_to_pending();
    CHECK(r.pending.dead_letter);  // the carried verdict is the record's, not the try's
    r.resume_dead_letter();
    r.finish(Outcome::dead_lettered, "too many headers");
    r.note_committed();
    CHECK(r.committed());
    CHECK_FALSE(r.settled_key());  // no dedup row: a later copy may still apply
    CHECK(r.stored() == StoredOutcome::dead_lettered);
    CHECK(r.stored_fingerprint() == r.fingerprint);
}
