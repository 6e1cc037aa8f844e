// config/suggestions.hpp: the "did you mean" of config problems. Pure.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/suggestions.hpp"

using exo::closest;
using exo::did_you_mean;
using exo::edit_distance;

TEST_SUITE("suggestions") {
    TEST_CASE("an inserted, dropped or changed letter and a swapped pair each count as one edit") {
        CHECK(edit_distance("ledger", "ledger") == 0);
        CHECK(edit_distance("ledgr", "ledger") == 1);
        CHECK(edit_distance("ledgerr", "ledger") == 1);
        CHECK(edit_distance("ledgar", "ledger") == 1);
        CHECK(edit_distance("strcit", "strict") == 1);
        CHECK(edit_distance("", "abc") == 3);
        CHECK(edit_distance("abc", "") == 3);
    }

    TEST_CASE("the closest candidate is offered only within two edits") {
        const std::vector<std::string_view> keys = {"workers", "batch_size", "linger_ms"};
        CHECK(closest("wrokers", keys) == std::optional<std::string_view>("workers"));
        CHECK(closest("batch_sz", keys) == std::optional<std::string_view>("batch_size"));
        CHECK_FALSE(closest("threads", keys).has_value());
        CHECK_FALSE(closest("anything", {}).has_value());
    }

    TEST_CASE("of equally close candidates the first listed is offered") {
        CHECK(closest("ab", {"ax", "ay"}) == std::optional<std::string_view>("ax"));
        CHECK(closest("ab", {"ay", "ax"}) == std::optional<std::string_view>("ay"));
    }

    TEST_CASE("did_you_mean is a ready clause, or nothing when no candidate is close") {
        CHECK(did_you_mean("stirct", {"latest", "strict"}) == " (did you mean 'strict'?)");
        CHECK(did_you_mean("sometimes", {"latest", "strict"}).empty());
    }
}
