// core/text.hpp: what PostgreSQL and Redis can store, decided before anything is stored.
#include <doctest/doctest.h>

#include <string>

#include "core/text.hpp"

using exo::is_postgres_text;
using exo::printable_text;
using exo::stored_key;

TEST_CASE("well-formed UTF-8 of every length is PostgreSQL text") {
    CHECK(is_postgres_text(""));
    CHECK(is_postgres_text("plain ascii"));
    CHECK(is_postgres_text("caf\xC3\xA9"));       // 2 bytes
    CHECK(is_postgres_text("\xE2\x82\xAC"));      // 3 bytes (euro sign)
    CHECK(is_postgres_text("\xED\x9F\xBF"));      // U+D7FF, just below the surrogates
    CHECK(is_postgres_text("\xEE\x80\x80"));      // U+E000, just above them
    CHECK(is_postgres_text("\xF0\x9F\x98\x80"));  // 4 bytes (emoji)
    CHECK(is_postgres_text("\xF4\x8F\xBF\xBF"));  // U+10FFFF, the last code point
}

TEST_CASE("every class of invalid UTF-8 PostgreSQL refuses is refused here too") {
    CHECK_FALSE(is_postgres_text(std::string("a\0b", 3)));  // NUL ends a libpq parameter
    CHECK_FALSE(
        is_postgres_text("\xC0\x80"
                         "abc"));                       // overlong NUL
    CHECK_FALSE(is_postgres_text("\xC1\xBF"));          // overlong ASCII
    CHECK_FALSE(is_postgres_text("\xE0\x80\xAF"));      // overlong 3-byte
    CHECK_FALSE(is_postgres_text("\xF0\x80\x80\xAF"));  // overlong 4-byte
    CHECK_FALSE(is_postgres_text("\xED\xA0\x80"));      // UTF-16 surrogate U+D800
    CHECK_FALSE(is_postgres_text("\xED\xBF\xBF"));      // surrogate U+DFFF
    CHECK_FALSE(is_postgres_text("\xF4\x90\x80\x80"));  // above U+10FFFF
    for (int b = 0xF5; b <= 0xFF; ++b)
        CHECK_FALSE(is_postgres_text(std::string(1, static_cast<char>(b)) + "\x80\x80\x80"));
    CHECK_FALSE(is_postgres_text("\x80"));  // stray continuation byte
    CHECK_FALSE(is_postgres_text("\xC3"));  // truncated at the end
    CHECK_FALSE(is_postgres_text("\xE2\x82"));
    CHECK_FALSE(is_postgres_text("\xE2\x28\xA1"));  // continuation missing inside
}

TEST_CASE("stored keys never collide: a literal 'binary:' key is encoded like raw bytes") {
    const std::string raw("\xFF\x01", 2);
    CHECK(stored_key(raw) == "binary:ff01");
    CHECK(stored_key("binary:ff01") != stored_key(raw));
    CHECK(stored_key("binary:ff01") == "binary:62696e6172793a66663031");
    CHECK(stored_key("binar") == "binar");
    CHECK(stored_key("Binary:x") == "Binary:x");
}

TEST_CASE("every stored key is PostgreSQL text") {
    for (const std::string& input : {std::string("\xC0\x80"
                                                 "abc"),
                                     std::string("\xED\xA0\x80"), std::string("\xF5"),
                                     std::string(16, '\0'), std::string("ok")})
        CHECK(is_postgres_text(stored_key(input)));
}

TEST_CASE("printable text replaces what PostgreSQL refuses and keeps the rest") {
    CHECK(printable_text("fine") == "fine");
    CHECK(printable_text(std::string("a\0b", 3)) ==
          "a\xEF\xBF\xBD"
          "b");
    CHECK(printable_text("x\xC0\x80y") == "x\xEF\xBF\xBD\xEF\xBF\xBDy");
    CHECK(is_postgres_text(printable_text("\xED\xA0\x80\xF5\xFF")));
}

TEST_CASE("printable text is cut on a character boundary and marked") {
    const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC";  // 12 bytes
    CHECK(printable_text(euros, 12) == euros);
    const std::string cut = printable_text(euros, 10);
    CHECK(cut == "\xE2\x82\xAC\xE2\x82\xAC...");
    CHECK(cut.size() <= 10);
    CHECK(is_postgres_text(cut));
    CHECK(printable_text(std::string(100000, 'x'), 2048).size() == 2048);
}

TEST_CASE(
    "one-line text escapes newlines, terminal escapes, C1 controls and bidirectional overrides, "
    "and keeps the rest") {
    using exo::one_line_text;
    CHECK(one_line_text("plain caf\xC3\xA9 \xE2\x82\xAC") == "plain caf\xC3\xA9 \xE2\x82\xAC");
    CHECK(one_line_text("a\nb\r\tc\\d") == "a\\nb\\r\\tc\\\\d");
    CHECK(one_line_text("\x1B[31mred\x1B[0m") == "\\u001b[31mred\\u001b[0m");
    CHECK(one_line_text("del\x7F") == "del\\u007f");
    CHECK(one_line_text("csi\xC2\x9B"
                        "2J") == "csi\\u009b2J");  // C1 CSI
    CHECK(one_line_text("abc\xE2\x80\xAE"
                        "cba") == "abc\\u202ecba");  // RIGHT-TO-LEFT OVERRIDE
    CHECK(one_line_text("line\xE2\x80\xA8sep") == "line\\u2028sep");
    CHECK(one_line_text(std::string("nul\0!", 5)) == "nul\xEF\xBF\xBD!");
    // Injective: an escaped newline and a literal backslash-n stay different.
    CHECK(one_line_text("\\n") != one_line_text("\n"));
    CHECK(one_line_text(std::string(10, 'x'), 6) == "xxx...");
}
