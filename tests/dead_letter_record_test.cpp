// The digest exo records of each dead letter it writes: pg/dead_letter_record.hpp.
// No servers.
#include <doctest/doctest.h>

#include "pg/dead_letter_record.hpp"
#include "pg/migrations.hpp"

using namespace exo;

TEST_CASE(
    "a dead letter's digest is the SHA-256 of its key, value and headers, each with its "
    "size") {
    CHECK(dead_letter_digest(std::string("ab"), "cd", {}) == sha256_hex("k2:abv2:cdh0:"));
    CHECK(dead_letter_digest(std::nullopt, "cd", {{"n", "x"}, {"m", std::nullopt}}) ==
          sha256_hex("k-v2:cdh2:1:n1:x1:m-"));
}

TEST_CASE(
    "a dead letter's digest changes with its key, its value, its headers, or where one "
    "ends") {
    const std::vector<RecordHeader> none;
    const auto d = dead_letter_digest(std::string("ab"), "cd", none);
    CHECK(dead_letter_digest(std::string("ab"), "ce", none) != d);
    CHECK(dead_letter_digest(std::string("ac"), "cd", none) != d);
    CHECK(dead_letter_digest(std::string("a"), "bcd", none) != d);
    CHECK(dead_letter_digest(std::string("abv2:cd"), "", none) != d);
    CHECK(dead_letter_digest(std::nullopt, "cd", none) !=
          dead_letter_digest(std::string(""), "cd", none));
    CHECK(dead_letter_digest(std::string("-"), "", none) !=
          dead_letter_digest(std::nullopt, "", none));
    const std::vector<RecordHeader> tenant_a{{"tenant", "a"}};
    CHECK(dead_letter_digest(std::string("ab"), "cd", tenant_a) != d);
    CHECK(dead_letter_digest(std::string("ab"), "cd", {{"tenant", "b"}}) !=
          dead_letter_digest(std::string("ab"), "cd", tenant_a));
    CHECK(dead_letter_digest(std::string("ab"), "cd", {{"tenant", std::nullopt}}) !=
          dead_letter_digest(std::string("ab"), "cd", {{"tenant", ""}}));
    CHECK(dead_letter_digest(std::string("ab"), "cd", {{"a", "b"}, {"c", "d"}}) !=
          dead_letter_digest(std::string("ab"), "cd", {{"c", "d"}, {"a", "b"}}));
}
