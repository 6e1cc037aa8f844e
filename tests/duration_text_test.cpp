// core/duration_text.hpp: the fix suggested for a duration written with a unit
// where whole milliseconds were expected. Pure.
#include <doctest/doctest.h>

#include <optional>

#include "core/duration_text.hpp"

using exo::not_whole_milliseconds;
using exo::with_unit_as_ms;

TEST_SUITE("duration text") {
    TEST_CASE("each unit becomes its milliseconds, with or without a space before it") {
        CHECK(with_unit_as_ms("250ms") == 250LL);
        CHECK(with_unit_as_ms("5s") == 5000LL);
        CHECK(with_unit_as_ms("5 s") == 5000LL);
        CHECK(with_unit_as_ms("2m") == 120000LL);
        CHECK(with_unit_as_ms("2min") == 120000LL);
        CHECK(with_unit_as_ms("1.5h") == 5400000LL);
        CHECK(with_unit_as_ms("1d") == 86400000LL);
    }

    TEST_CASE("no suggestion without a known unit or for a part of a millisecond") {
        CHECK_FALSE(with_unit_as_ms("5000").has_value());  // nothing to fix
        CHECK_FALSE(with_unit_as_ms("5x").has_value());
        CHECK_FALSE(with_unit_as_ms("s").has_value());
        CHECK_FALSE(with_unit_as_ms("0.5ms").has_value());
        CHECK_FALSE(with_unit_as_ms("9999999999999999d").has_value());  // beyond long long
        CHECK_FALSE(with_unit_as_ms("1..5s").has_value());
    }

    TEST_CASE("the message quotes the text and adds the fix when there is one") {
        CHECK(not_whole_milliseconds("5s") ==
              "expected a duration in whole milliseconds (e.g. 1500), got '5s'; write 5000");
        CHECK(not_whole_milliseconds("soon") ==
              "expected a duration in whole milliseconds (e.g. 1500), got 'soon'");
    }
}
