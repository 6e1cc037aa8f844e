// Crash-test failpoints: core/failpoints.hpp. No servers. The kill or stop
// itself is never triggered here (it would take the test binary with it); the
// crash tests in integration/ cover it.
#include <doctest/doctest.h>

#include <string>

#include <exo/errors.hpp>
#include "core/failpoints.hpp"

using namespace exo;

TEST_SUITE("Failpoints") {
    TEST_CASE("an empty spec arms nothing") {
        CHECK(Failpoints::parse("").empty());
        CHECK(Failpoints::parse(",").empty());
    }

    TEST_CASE("a default-constructed set arms nothing") {
        CHECK(Failpoints{}.empty());
    }

    TEST_CASE("a single kill is armed") {
        CHECK_FALSE(Failpoints::parse("after_claim=kill").empty());
    }

    TEST_CASE("a kill on the N-th pass is armed") {
        CHECK_FALSE(Failpoints::parse("after_pg_commit=kill@3").empty());
        CHECK_FALSE(Failpoints::parse("after_pg_commit=kill@1").empty());
    }

    TEST_CASE("a stop (freeze) on the N-th pass is armed") {
        CHECK_FALSE(Failpoints::parse("after_claim=stop").empty());
        CHECK_FALSE(Failpoints::parse("after_claim=stop@2,after_pg_commit=kill@3").empty());
        CHECK_THROWS_AS(Failpoints::parse("after_claim=stop@0"), UsageError);
    }

    TEST_CASE("several comma-separated failpoints are accepted") {
        CHECK_FALSE(Failpoints::parse("after_claim=kill@2,after_pg_commit=kill").empty());
        CHECK_FALSE(Failpoints::parse("after_claim=kill,").empty());
    }

    TEST_CASE("an item without '=' is a usage error") {
        CHECK_THROWS_WITH_AS(Failpoints::parse("after_claim"), doctest::Contains("after_claim"),
                             UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill,after_pg_commit"), UsageError);
    }

    TEST_CASE("an action other than kill is a usage error") {
        CHECK_THROWS_AS(Failpoints::parse("after_claim=panic"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim="), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=KILL"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill2"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=pause"), UsageError);
    }

    TEST_CASE("a pass count that is not a positive number is a usage error") {
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill@0"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill@-2"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill@"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill@many"), UsageError);
    }

    // Regression: std::atoi stops at the first non-digit, so "kill@3x" armed the 3rd pass
    // and "kill@1.5" the 1st: a typo in a crash test's spec silently changes
    // which pass dies instead of being reported.
    TEST_CASE("a pass count with trailing garbage is a usage error") {
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill@3x"), UsageError);
        CHECK_THROWS_AS(Failpoints::parse("after_claim=kill@1.5"), UsageError);
    }

    // Regression: "=kill" armed a failpoint with an empty name that no code path hits: the
    // crash test then runs without ever crashing.
    TEST_CASE("a failpoint without a name is a usage error") {
        CHECK_THROWS_AS(Failpoints::parse("=kill"), UsageError);
    }

    TEST_CASE("hitting a point when nothing is armed does nothing") {
        Failpoints none;
        for (int i = 0; i < 10; ++i) none.hit("after_pg_commit");
        CHECK(none.empty());
    }

    TEST_CASE("hitting a point that is not armed does nothing, whatever is armed") {
        auto fp = Failpoints::parse("after_pg_commit=kill");
        for (int i = 0; i < 10; ++i) fp.hit("after_claim");
        CHECK_FALSE(fp.empty());
    }

    // Counting passes without reaching the armed one: if the count were off,
    // this would kill the test binary, which fails the suite loudly.
    TEST_CASE("passes before the armed one go through") {
        auto fp = Failpoints::parse("after_pg_commit=kill@5");
        for (int i = 0; i < 4; ++i) fp.hit("after_pg_commit");
        CHECK_FALSE(fp.empty());
    }

    TEST_CASE("a cancel fires on its N-th pass only") {
        auto fp = Failpoints::parse("pg_commit_probe=cancel@2");
        CHECK_FALSE(fp.cancels("pg_commit_probe"));
        CHECK(fp.cancels("pg_commit_probe"));
        CHECK_FALSE(fp.cancels("pg_commit_probe"));
        CHECK_FALSE(Failpoints::parse("pg_commit_probe=cancel").cancels("after_claim"));
    }

    // A wrong kind would kill the test binary (a hit that raised) or arm the kill one
    // pass early (a cancels() that counted): either fails the suite loudly.
    TEST_CASE("a cancel point is never a signal, and a kill point never cancels") {
        auto fp = Failpoints::parse("pg_commit_probe=cancel,after_claim=kill@2");
        fp.hit("pg_commit_probe");
        CHECK(fp.cancels("pg_commit_probe"));  // the hit was not its pass
        CHECK_FALSE(fp.cancels("after_claim"));
        fp.hit("after_claim");  // its 1st pass: cancels() did not count one
    }
}
