// A binding's options as a handler reads them: exo/options.hpp. No servers.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <exo/options.hpp>

using namespace exo;
using namespace std::chrono_literals;

namespace {

// Options as the config parser hands them over: bindings[0].options written at
// line 7, each value on its own line below it.
HandlerOptions options_of(const std::map<std::string, std::string>& texts) {
    std::map<std::string, HandlerOptions::Value> values;
    int line = 8;
    for (const auto& [key, text] : texts) values[key] = {text, line++};
    return HandlerOptions("exo.yaml", "bindings[0].options", std::move(values), 7);
}

// The OptionError `read` throws; fails the test if it does not.
template <typename Read>
std::string error_of(Read&& read) {
    try {
        read();
    } catch (const OptionError& e) {
        return e.what();
    }
    FAIL("expected an OptionError");
    return {};
}

}  // namespace

TEST_SUITE("handler options") {
    TEST_CASE("each accessor converts the text written in the YAML") {
        const HandlerOptions o = options_of({{"currency", "EUR"},
                                             {"max_amount", "100000"},
                                             {"rate", "0.25"},
                                             {"audit", "true"},
                                             {"hold_ms", "250"}});
        CHECK(o.string("currency") == "EUR");
        CHECK(o.integer("max_amount") == 100000);
        CHECK(o.number("rate") == doctest::Approx(0.25));
        CHECK(o.boolean("audit"));
        CHECK(o.milliseconds("hold_ms") == 250ms);
        // Any value reads as text, as written.
        CHECK(o.string("max_amount") == "100000");
        CHECK(o.has("audit"));
        CHECK_FALSE(o.has("Audit"));
    }

    TEST_CASE("a fallback is used only when the key is absent") {
        const HandlerOptions o = options_of({{"currency", "USD"}, {"limit", "3"}});
        CHECK(o.string("currency", "EUR") == "USD");
        CHECK(o.string("region", "eu") == "eu");
        CHECK(o.integer("limit", 10) == 3);
        CHECK(o.integer("retries", 10) == 10);
        CHECK(o.number("rate", 1.5) == doctest::Approx(1.5));
        CHECK(o.boolean("audit", true));
        CHECK_FALSE(o.boolean("audit", false));
        CHECK(o.milliseconds("hold_ms", 40ms) == 40ms);
    }

    TEST_CASE("a fallback does not hide a value of the wrong type") {
        const HandlerOptions o = options_of({{"limit", "lots"}});
        CHECK_THROWS_AS(o.integer("limit", 10), OptionError);
    }

    TEST_CASE("a missing option names its path and the line of the options map") {
        const HandlerOptions o = options_of({{"currency", "EUR"}});
        CHECK(error_of([&] { o.string("region"); }) ==
              "exo.yaml:7: bindings[0].options.region: required option is missing: add it under "
              "bindings[0].options");
        CHECK(error_of([&] { o.integer("limit"); }).find("bindings[0].options.limit: required") !=
              std::string::npos);
        CHECK_THROWS_AS(o.number("rate"), OptionError);
        CHECK_THROWS_AS(o.boolean("audit"), OptionError);
        CHECK_THROWS_AS(o.milliseconds("hold_ms"), OptionError);
    }

    TEST_CASE("the line is left out when it is not known") {
        const HandlerOptions o("exo.yaml", "bindings[2].options", {{"limit", {"x", 0}}});
        CHECK(error_of([&] { o.string("region"); }) ==
              "exo.yaml: bindings[2].options.region: required option is missing: add it under "
              "bindings[2].options");
        CHECK(error_of([&] { o.integer("limit"); }) ==
              "exo.yaml: bindings[2].options.limit: expected a whole number, got 'x'");
    }

    TEST_CASE("an option error is a usage error") {
        const HandlerOptions o;
        CHECK_THROWS_AS(o.string("x"), UsageError);
    }

    TEST_CASE("a whole number is read in full, with an optional sign") {
        const HandlerOptions o = options_of({{"a", "-42"}, {"b", "+7"}, {"c", "0"}});
        CHECK(o.integer("a") == -42);
        CHECK(o.integer("b") == 7);
        CHECK(o.integer("c") == 0);
    }

    TEST_CASE("text that is not a whole number is refused with the value quoted at its line") {
        const HandlerOptions o = options_of(
            {{"a", "lots"}, {"b", "12abc"}, {"c", "1.5"}, {"d", ""}, {"e", " 5"}, {"f", "+-5"}});
        CHECK(error_of([&] { o.integer("a"); }) ==
              "exo.yaml:8: bindings[0].options.a: expected a whole number, got 'lots'");
        CHECK(error_of([&] { o.integer("b"); }) ==
              "exo.yaml:9: bindings[0].options.b: expected a whole number, got '12abc'");
        CHECK(error_of([&] { o.integer("c"); }).find("got '1.5'") != std::string::npos);
        CHECK(error_of([&] { o.integer("d"); }).find("got ''") != std::string::npos);
        CHECK(error_of([&] { o.integer("e"); }).find("got ' 5'") != std::string::npos);
        CHECK(error_of([&] { o.integer("f"); }).find("got '+-5'") != std::string::npos);
    }

    TEST_CASE("a whole number beyond 64 bits is refused, not wrapped") {
        const HandlerOptions o = options_of({{"max", "9223372036854775807"},
                                             {"min", "-9223372036854775808"},
                                             {"over", "9223372036854775808"},
                                             {"under", "-9223372036854775809"}});
        CHECK(o.integer("max") == std::numeric_limits<std::int64_t>::max());
        CHECK(o.integer("min") == std::numeric_limits<std::int64_t>::min());
        CHECK(error_of([&] { o.integer("over"); }) ==
              "exo.yaml:10: bindings[0].options.over: expected a whole number between "
              "-9223372036854775808 and 9223372036854775807, got '9223372036854775808'");
        CHECK(error_of([&] { o.integer("under"); }).find("got '-9223372036854775809'") !=
              std::string::npos);
    }

    TEST_CASE("a number must be finite") {
        const HandlerOptions o = options_of({{"a", "1e3"},
                                             {"b", "-0.5"},
                                             {"c", "+2.5"},
                                             {"inf", "inf"},
                                             {"nan", "nan"},
                                             {"huge", "1e999"},
                                             {"word", "half"}});
        CHECK(o.number("a") == doctest::Approx(1000));
        CHECK(o.number("b") == doctest::Approx(-0.5));
        CHECK(o.number("c") == doctest::Approx(2.5));
        const std::string inf = error_of([&] { o.number("inf"); });
        CHECK(inf.find("bindings[0].options.inf: expected a finite number, got 'inf'") !=
              std::string::npos);
        CHECK(error_of([&] { o.number("nan"); }).find("expected a finite number, got 'nan'") !=
              std::string::npos);
        CHECK(error_of([&] { o.number("huge"); }).find("expected a finite number, got '1e999'") !=
              std::string::npos);
        const std::string word = error_of([&] { o.number("word"); });
        CHECK(word.find("expected a number (e.g. 0.25), got 'half'") != std::string::npos);
    }

    TEST_CASE("booleans accept true/false, yes/no and on/off in any case") {
        const HandlerOptions o = options_of({{"a", "true"},
                                             {"b", "FALSE"},
                                             {"c", "Yes"},
                                             {"d", "no"},
                                             {"e", "ON"},
                                             {"f", "off"},
                                             {"g", "1"},
                                             {"h", "maybe"}});
        CHECK(o.boolean("a"));
        CHECK_FALSE(o.boolean("b"));
        CHECK(o.boolean("c"));
        CHECK_FALSE(o.boolean("d"));
        CHECK(o.boolean("e"));
        CHECK_FALSE(o.boolean("f"));
        CHECK(error_of([&] { o.boolean("g"); }).find("expected true or false") !=
              std::string::npos);
        CHECK(error_of([&] { o.boolean("h"); }) ==
              "exo.yaml:15: bindings[0].options.h: expected true or false (or yes/no, on/off), got "
              "'maybe'");
    }

    TEST_CASE("milliseconds are a whole number, not negative") {
        const HandlerOptions o = options_of({{"a", "0"}, {"b", "1500"}, {"neg", "-5"}});
        CHECK(o.milliseconds("a") == 0ms);
        CHECK(o.milliseconds("b") == 1500ms);
        CHECK(error_of([&] { o.milliseconds("neg"); }) ==
              "exo.yaml:10: bindings[0].options.neg: must be at least 0, got '-5'");
    }

    TEST_CASE("a duration written with a unit gets the number of milliseconds to write") {
        const HandlerOptions o = options_of(
            {{"a", "5s"}, {"b", "2min"}, {"c", "1.5h"}, {"d", "soon"}, {"e", "9999999999999999d"}});
        CHECK(error_of([&] { o.milliseconds("a"); }) ==
              "exo.yaml:8: bindings[0].options.a: expected a duration in whole milliseconds (e.g. "
              "1500), got '5s'; write 5000");
        CHECK(error_of([&] { o.milliseconds("b"); }).find("got '2min'; write 120000") !=
              std::string::npos);
        CHECK(error_of([&] { o.milliseconds("c"); }).find("got '1.5h'; write 5400000") !=
              std::string::npos);
        const std::string d = error_of([&] { o.milliseconds("d"); });
        CHECK(d.find("got 'soon'") != std::string::npos);
        CHECK(d.find("; write") == std::string::npos);
        // Too large for any suggestion: refused without one, and without overflow.
        CHECK(error_of([&] { o.milliseconds("e"); }).find("; write") == std::string::npos);
    }

    TEST_CASE("milliseconds beyond 64 bits are refused") {
        const HandlerOptions o =
            options_of({{"big", "99999999999999999999"}, {"neg", "-99999999999999999999"}});
        const std::string big = error_of([&] { o.milliseconds("big"); });
        CHECK(big.find("must be at most 9223372036854775807, got '99999999999999999999'") !=
              std::string::npos);
        CHECK(error_of([&] { o.milliseconds("neg"); }).find("must be at least 0") !=
              std::string::npos);
    }

    TEST_CASE("empty options have no keys and every read takes its fallback") {
        const HandlerOptions o;
        CHECK(o.empty());
        CHECK(o.keys().empty());
        CHECK_FALSE(o.has("currency"));
        CHECK(o.string("currency", "EUR") == "EUR");
        CHECK(o.integer("limit", 3) == 3);
        CHECK(o.milliseconds("hold_ms", 5ms) == 5ms);
        // Without a source or path the error still names the key.
        CHECK(error_of([&] { o.string("currency"); }) ==
              "currency: required option is missing: add it under the binding's options");
    }

    TEST_CASE("keys are listed in name order") {
        const HandlerOptions o = options_of({{"zeta", "1"}, {"alpha", "2"}, {"mid", "3"}});
        CHECK_FALSE(o.empty());
        CHECK(o.keys() == std::vector<std::string>{"alpha", "mid", "zeta"});
    }

    TEST_CASE("a handler's own check is reported like a config problem") {
        const HandlerOptions o = options_of({{"max_amount", "-5"}});
        CHECK(error_of([&] { o.fail("max_amount", "must be positive, got -5"); }) ==
              "exo.yaml:8: bindings[0].options.max_amount: must be positive, got -5");
    }

    TEST_CASE("a NUL byte in a quoted value does not cut the error message short") {
        const HandlerOptions o = options_of({{"limit", std::string("12\0ab", 5)}});
        const std::string e = error_of([&] { o.integer("limit"); });
        CHECK(e.find('\0') == std::string::npos);
        // U+FFFD where the NUL was (split so "ab" is not read as more hex digits).
        CHECK(e.find("got '12\xEF\xBF\xBD"
                     "ab'") != std::string::npos);
    }
}
