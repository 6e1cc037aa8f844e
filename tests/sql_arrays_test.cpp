// The array literals set-based statements pass as one text parameter
// (<exo/sql_arrays.hpp>): every element quoted, '"' and '\' escaped, nothing
// else touched, so PostgreSQL reads back exactly the strings given.
#include <doctest/doctest.h>

#include <cstdint>
#include <exo/sql_arrays.hpp>
#include <string>
#include <vector>

TEST_CASE("text arrays quote every element and escape only quotes and backslashes") {
    CHECK(exo::text_array({}) == "{}");
    CHECK(exo::text_array({""}) == R"({""})");
    CHECK(exo::text_array({"NULL", "a,b", "{x}", " sp "}) == R"({"NULL","a,b","{x}"," sp "})");
    CHECK(exo::text_array({R"(say "hi")", R"(C:\dir\)", R"("\)"}) ==
          R"({"say \"hi\"","C:\\dir\\","\"\\"})");
    CHECK(exo::text_array({"ü:%€"}) == "{\"ü:%€\"}");
}

TEST_CASE("integer arrays print every value, the extremes included") {
    CHECK(exo::int_array(std::vector<std::int64_t>{}) == "{}");
    CHECK(exo::int_array(std::vector<std::int64_t>{INT64_MIN, -1, 0, INT64_MAX}) ==
          "{-9223372036854775808,-1,0,9223372036854775807}");
}
