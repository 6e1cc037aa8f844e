#include <doctest/doctest.h>

#include <set>
#include <string>

#include "core/outcome.hpp"
#include "protocol/batch_record.hpp"

using exo::Outcome;
using exo::StoredOutcome;

TEST_CASE("every delivery outcome has a distinct metric label") {
    std::set<std::string> labels;
    for (auto o : exo::kOutcomes) labels.insert(exo::to_string(o));
    CHECK(labels == std::set<std::string>{"applied", "duplicate_redis", "duplicate_postgres",
                                          "duplicate_in_batch", "stale", "dead_lettered"});
}

TEST_CASE("a stored outcome reads back from its dedup row spelling, and nothing else does") {
    for (auto o : {StoredOutcome::applied, StoredOutcome::stale, StoredOutcome::dead_lettered})
        CHECK(exo::parse_stored_outcome(exo::to_sql(o)) == o);
    CHECK(std::string(exo::to_sql(StoredOutcome::dead_lettered)) == "DEAD_LETTERED");
    CHECK_FALSE(exo::parse_stored_outcome("COMPLETED"));
    CHECK_FALSE(exo::parse_stored_outcome("applied"));
    CHECK_FALSE(exo::parse_stored_outcome(""));
}

namespace {
exo::BatchRecord item() {
    exo::PendingRecord p;
    p.record.value = "{}";
    return exo::BatchRecord(std::move(p), 0);
}
}  // namespace

TEST_CASE("a finished record stores what its own outcome says about its key") {
    auto a = item();
    a.finish(Outcome::applied);
    CHECK(a.stored() == StoredOutcome::applied);
    auto s = item();
    s.finish(Outcome::stale);
    CHECK(s.stored() == StoredOutcome::stale);
    auto d = item();
    d.finish(Outcome::dead_lettered);
    CHECK(d.stored() == StoredOutcome::dead_lettered);
    CHECK(d.is_finished());
}

TEST_CASE("a duplicate of a dead-lettered key is a duplicate that keeps the key dead-lettered") {
    auto dup = item();
    dup.finish_duplicate(Outcome::duplicate_postgres, StoredOutcome::dead_lettered, "bad payload");
    CHECK(dup.outcome() == Outcome::duplicate_postgres);
    CHECK(dup.stored() == StoredOutcome::dead_lettered);
    CHECK(dup.result() == "bad payload");
    dup.reset_to_pending();
    CHECK_FALSE(dup.outcome());
    CHECK(dup.stored() == StoredOutcome::applied);
    CHECK(dup.result().empty());
}
