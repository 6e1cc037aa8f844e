// The sequence decisions of a whole group of records at once:
// core/sequence_plan.hpp. No servers. Each row is worked out by hand from the
// rules of docs/design.md#postgresql-tables-and-sequences, not from the code: verdicts are written
// as one letter per record (A apply, S stale, G gap).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/sequence_plan.hpp"

using namespace exo;

namespace {

constexpr auto kLatest = SequenceMode::latest;
constexpr auto kStrict = SequenceMode::strict;
constexpr std::optional<std::int64_t> kNew = std::nullopt;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

struct Row {
    const char* name;
    std::vector<std::optional<std::int64_t>> last;   // per entity, before the group
    std::vector<PlannedRecord> records;              // in partition order
    std::string verdicts;                            // expected, one letter per record
    std::vector<std::optional<std::int64_t>> after;  // expected last per entity
};

std::string letters(const std::vector<SequenceVerdict>& verdicts) {
    std::string out;
    for (auto v : verdicts)
        out += v == SequenceVerdict::apply ? 'A' : v == SequenceVerdict::stale ? 'S' : 'G';
    return out;
}

PlannedRecord strict(std::size_t entity, std::int64_t sequence) {
    return {entity, kStrict, sequence};
}
PlannedRecord latest(std::size_t entity, std::int64_t sequence) {
    return {entity, kLatest, sequence};
}

}  // namespace

TEST_CASE("a group's sequences are planned as the records would be decided one after another") {
    const std::vector<Row> rows = {
        {"strict: a new entity applies 1, 2, 3 in one group",
         {kNew},
         {strict(0, 1), strict(0, 2), strict(0, 3)},
         "AAA",
         {3}},
        {"strict: a new entity starting at 2 waits for 1",
         {kNew},
         {strict(0, 2), strict(0, 3)},
         "GG",
         {kNew}},
        {"strict: 1 arriving after 2 applies, 2 stays parked",
         {kNew},
         {strict(0, 2), strict(0, 1)},
         "GA",
         {1}},
        {"strict: a gap parks only the records behind it",
         {5},
         {strict(0, 6), strict(0, 8), strict(0, 9), strict(0, 7)},
         "AGGA",
         {7}},
        {"strict: older and equal sequences are stale",
         {5},
         {strict(0, 4), strict(0, 5), strict(0, 6), strict(0, 6)},
         "SSAS",
         {6}},
        {"strict: a sequence equal to one applied earlier in the group is stale",
         {kNew},
         {strict(0, 1), strict(0, 1)},
         "AS",
         {1}},
        {"strict: an entity at INT64_MAX answers stale",
         {kMax},
         {strict(0, kMax), strict(0, 0)},
         "SS",
         {kMax}},
        {"strict: a gap in one entity holds back no other entity",
         {2, kNew},
         {strict(0, 4), strict(1, 1), strict(0, 3), strict(1, 2)},
         "GAAA",
         {3, 2}},
        {"latest: a new entity accepts any first sequence", {kNew}, {latest(0, 40)}, "A", {40}},
        {"latest: older or equal is stale, newer jumps",
         {10},
         {latest(0, 9), latest(0, 10), latest(0, 15), latest(0, 12), latest(0, 20)},
         "SSASA",
         {20}},
        {"latest: zero is a first sequence like any other",
         {kNew},
         {latest(0, 0), latest(0, 0)},
         "AS",
         {0}},
        {"nothing applied leaves the entity as it was",
         {7, kNew},
         {strict(0, 3), strict(1, 5)},
         "SG",
         {7, kNew}},
        {"an empty group plans nothing", {4}, {}, "", {4}},
    };
    for (const auto& row : rows) {
        CAPTURE(row.name);
        const auto plan = plan_sequences(row.last, row.records);
        CHECK(letters(plan.verdicts) == row.verdicts);
        CHECK(plan.last == row.after);
        for (std::size_t e = 0; e < row.last.size(); ++e) {
            CAPTURE(e);
            CHECK(plan.moved[e] == (row.last[e] != row.after[e]));
        }
    }
}

TEST_CASE("a record naming an entity the plan was not given is refused") {
    CHECK_THROWS_AS(plan_sequences({kNew}, {strict(1, 1)}), std::out_of_range);
}
