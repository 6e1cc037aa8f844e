// config/env_expansion.hpp: ${NAME} references resolved from an environment
// given by the test. No YAML, no process environment.
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>

#include "config/env_expansion.hpp"

using exo::EnvExpansion;
using exo::EnvLookup;
using exo::expand_env;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

}  // namespace

TEST_SUITE("env expansion") {
    TEST_CASE("text without ${ is returned as it is, lone dollars included") {
        const EnvExpansion e = expand_env("pa$$word $HOME $ {x} $", env_of({}));
        CHECK(e.text == "pa$$word $HOME $ {x} $");
        CHECK(e.errors.empty());
    }

    TEST_CASE("a set variable is replaced wherever it stands, any number of times") {
        const EnvExpansion e = expand_env("${A}-${B}:${A}", env_of({{"A", "x"}, {"B", "y"}}));
        CHECK(e.text == "x-y:x");
        CHECK(e.errors.empty());
    }

    TEST_CASE("the default applies when the variable is unset or empty, as in the shell") {
        const EnvLookup env = env_of({{"EMPTY", ""}, {"SET", "v"}});
        CHECK(expand_env("${UNSET:-d}", env).text == "d");
        CHECK(expand_env("${EMPTY:-d}", env).text == "d");
        CHECK(expand_env("${SET:-d}", env).text == "v");
        CHECK(expand_env("${UNSET:-}", env).text.empty());
        CHECK(expand_env("${UNSET:-a:-b}", env).text == "a:-b");  // the first ":-" splits
    }

    TEST_CASE("a set but empty variable without a default expands to nothing") {
        const EnvExpansion e = expand_env("[${EMPTY}]", env_of({{"EMPTY", ""}}));
        CHECK(e.text == "[]");
        CHECK(e.errors.empty());
    }

    TEST_CASE("$${ is a literal ${ and is not expanded further") {
        const EnvExpansion e = expand_env("$${A} and $${", env_of({{"A", "x"}}));
        CHECK(e.text == "${A} and ${");
        CHECK(e.errors.empty());
    }

    TEST_CASE("an empty lookup means no variable is set") {
        const EnvExpansion e = expand_env("${A:-d} ${B}", EnvLookup{});
        CHECK(e.text == "d ");
        REQUIRE(e.errors.size() == 1);
        CHECK(e.errors[0] ==
              "environment variable B is not set: export it, or give a default as ${B:-value}");
    }

    TEST_CASE("every bad reference in one value is reported, and reading goes on after each") {
        const EnvExpansion e = expand_env("${1X}${}${A B}${OK}", env_of({{"OK", "fine"}}));
        CHECK(e.text == "fine");
        REQUIRE(e.errors.size() == 3);
        CHECK(e.errors[0] ==
              "${1X} does not name a variable: use letters, digits and '_', not starting with a "
              "digit");
        CHECK(e.errors[1].starts_with("${} does not name a variable"));
        CHECK(e.errors[2].starts_with("${A B} does not name a variable"));
    }

    TEST_CASE("an unclosed ${ ends the expansion with one problem") {
        const EnvExpansion e = expand_env("a${B}c${D", env_of({{"B", "b"}}));
        CHECK(e.text == "abc");
        REQUIRE(e.errors.size() == 1);
        CHECK(e.errors[0] ==
              "'${' is never closed: write ${NAME} or ${NAME:-default}, or '$${' for a literal "
              "'${'");
    }

    TEST_CASE("a name may hold letters, digits and underscores after its first character") {
        const EnvExpansion e = expand_env("${_a1_B2}", env_of({{"_a1_B2", "ok"}}));
        CHECK(e.text == "ok");
        CHECK(e.errors.empty());
    }
}
