// The transaction's retry ladder as data (protocol/passes/retry_ladder.hpp):
// one row per transition, the previous attempt in, the plan out.
#include <doctest/doctest.h>

#include <ostream>
#include <string>
#include <vector>

#include "protocol/passes/retry_ladder.hpp"

namespace exo {

// doctest prints a failing plan field by field.
std::ostream& operator<<(std::ostream& os, const Plan& p) {
    static const char* rungs[] = {"optimistic", "careful", "each_alone", "done"};
    return os << "{forget " << p.forget << ", nack_held " << p.nack_held << ", fail_outside "
              << p.fail_outside << ", fail_named " << p.fail_named << ", fail_commit "
              << p.fail_commit << ", next " << rungs[static_cast<int>(p.next)] << ", exclusions "
              << p.exclusions << "}";
}

}  // namespace exo

namespace {

using exo::Attempted;
using exo::kMaxExclusions;
using exo::Plan;
using exo::Rung;

TEST_SUITE("retry ladder") {
    TEST_CASE(
        "a transaction's records start optimistic, and a record alone after a failed "
        "COMMIT starts careful") {
        CHECK(exo::first_attempt(5, false) == Plan{.next = Rung::optimistic});
        CHECK(exo::first_attempt(1, false) == Plan{.next = Rung::optimistic});
        CHECK(exo::first_attempt(1, true) == Plan{.next = Rung::careful});
        // solo belongs to a record alone: several records never start careful.
        CHECK(exo::first_attempt(3, true) == Plan{.next = Rung::optimistic});
        CHECK(exo::first_attempt(0, false) == Plan{.next = Rung::done});
    }

    TEST_CASE("every transition of the ladder, one row each") {
        struct Row {
            const char* row;
            Attempted attempted;
            Plan expected;
        };
        const auto optimistic = Rung::optimistic;
        const auto careful = Rung::careful;
        const std::vector<Row> rows = {
            {"an optimistic attempt that commits is done",
             {.rung = optimistic, .committed = true, .records = 5},
             {.next = Rung::done}},
            {"... and NACKs the records whose entity was held, which it committed without",
             {.rung = optimistic, .committed = true, .entity_held = true, .records = 5},
             {.nack_held = true, .next = Rung::done}},
            {"a committed attempt keeps the exclusions it was planned with",
             {.rung = optimistic, .committed = true, .exclusions = 3, .records = 5},
             {.next = Rung::done, .exclusions = 3}},
            {"a failure that names no record runs the records carefully, verdicts forgotten",
             {.rung = optimistic, .records = 5},
             {.forget = true, .next = careful}},
            {"... and the entity-held records are NACKed after the verdicts are forgotten",
             {.rung = optimistic, .entity_held = true, .records = 5},
             {.forget = true, .nack_held = true, .next = careful}},
            {"a record a batch handler named fails alone, the rest run optimistic again",
             {.rung = optimistic, .named = true, .records = 5},
             {.forget = true, .fail_named = true, .next = optimistic, .exclusions = 1}},
            {"... up to the last exclusion",
             {.rung = optimistic, .named = true, .exclusions = kMaxExclusions - 1, .records = 20},
             {.forget = true,
              .fail_named = true,
              .next = optimistic,
              .exclusions = kMaxExclusions}},
            {"a handler that keeps naming records goes careful after kMaxExclusions, the "
             "named record not failed alone",
             {.rung = optimistic, .named = true, .exclusions = kMaxExclusions, .records = 20},
             {.forget = true, .next = careful, .exclusions = kMaxExclusions}},
            {"records whose before_transaction() threw fail together, the rest run optimistic "
             "again, no exclusion spent",
             {.rung = optimistic, .outside_failed = true, .exclusions = 2, .records = 5},
             {.forget = true, .fail_outside = true, .next = optimistic, .exclusions = 2}},
            {"... also at the bound of exclusions",
             {.rung = optimistic,
              .outside_failed = true,
              .exclusions = kMaxExclusions,
              .records = 5},
             {.forget = true,
              .fail_outside = true,
              .next = optimistic,
              .exclusions = kMaxExclusions}},
            {"a careful attempt that commits is done",
             {.rung = careful, .committed = true, .records = 5},
             {.next = Rung::done}},
            {"a careful COMMIT of several records that names none runs each record alone",
             {.rung = careful, .records = 5},
             {.next = Rung::each_alone}},
            {"a careful COMMIT of one record that fails is that record's failure",
             {.rung = careful, .records = 1},
             {.forget = true, .fail_commit = true, .next = Rung::done}},
        };
        for (const auto& r : rows) {
            const std::string row = r.row;
            CAPTURE(row);
            CHECK(exo::next_attempt(r.attempted) == r.expected);
        }
    }

    TEST_CASE(
        "a batch handler naming a record in every attempt costs at most kMaxExclusions "
        "optimistic attempts more, then one careful one") {
        auto plan = exo::first_attempt(50, false);
        int optimistic = 0;
        while (plan.next == Rung::optimistic) {
            ++optimistic;
            plan = exo::next_attempt({.rung = Rung::optimistic,
                                      .named = true,
                                      .exclusions = plan.exclusions,
                                      .records = 50});
        }
        CHECK(optimistic == kMaxExclusions + 1);
        CHECK(plan.next == Rung::careful);
    }
}

}  // namespace
