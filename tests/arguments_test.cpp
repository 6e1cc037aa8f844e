// `--flag value` parsing for the subcommands: app/arguments.hpp. No servers.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include <exo/errors.hpp>
#include "app/arguments.hpp"

using namespace exo;

namespace {

// argv for `exo <command> <args...>`; the strings live as long as this object.
class Argv {
public:
    Argv(std::initializer_list<std::string> args) : strings_{"exo", "cmd"} {
        strings_.insert(strings_.end(), args.begin(), args.end());
        for (auto& s : strings_) pointers_.push_back(s.data());
        pointers_.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(strings_.size()); }
    char** argv() { return pointers_.data(); }

private:
    std::vector<std::string> strings_;
    std::vector<char*> pointers_;
};

const std::vector<std::string> kAllowed = {"config", "topic", "count", "ratio"};

Arguments parse(std::initializer_list<std::string> args) {
    Argv a(args);
    return Arguments("cmd", a.argc(), a.argv(), 2, kAllowed, {"print"});
}

std::string usage_error_of(std::initializer_list<std::string> args) {
    try {
        parse(args);
    } catch (const UsageError& e) {
        return e.what();
    }
    FAIL("expected a UsageError");
    return {};
}

}  // namespace

TEST_SUITE("Arguments") {
    TEST_CASE("--flag value and --flag=value both set the flag") {
        auto args = parse({"--config", "a.yaml", "--topic=payments"});
        CHECK(args.get("config") == "a.yaml");
        CHECK(args.get("topic") == "payments");
    }

    TEST_CASE("a value after '=' may itself contain '='") {
        CHECK(parse({"--config=k=v"}).get("config") == "k=v");
    }

    TEST_CASE("an empty value after '=' is kept as empty") {
        auto args = parse({"--topic="});
        REQUIRE(args.get("topic").has_value());
        CHECK(args.get("topic")->empty());
    }

    TEST_CASE("arguments before `first` are not parsed") {
        Argv a({"--topic", "t"});
        Arguments args("cmd", a.argc(), a.argv(), 2, kAllowed);  // skips "exo" "cmd"
        CHECK(args.get("topic") == "t");
    }

    TEST_CASE("no arguments give no flags") {
        auto args = parse({});
        CHECK_FALSE(args.get("config").has_value());
        CHECK(args.all("topic").empty());
    }

    TEST_CASE("a repeated flag keeps every value in order and get returns the last") {
        auto args = parse({"--topic", "a", "--topic=b", "--config", "x", "--topic", "c"});
        CHECK(args.all("topic") == std::vector<std::string>{"a", "b", "c"});
        CHECK(args.get("topic") == "c");
        CHECK(args.all("config") == std::vector<std::string>{"x"});
    }

    TEST_CASE("an unknown flag is a usage error naming it and the command") {
        auto message = usage_error_of({"--config", "a.yaml", "--bogus", "1"});
        CHECK(message.find("--bogus") != std::string::npos);
        CHECK(message.find("cmd") != std::string::npos);
        usage_error_of({"--bogus=1"});
    }

    TEST_CASE("a flag name is matched exactly") {
        usage_error_of({"--Config", "a"});
        usage_error_of({"--conf", "a"});
        usage_error_of({"--", "a"});
    }

    TEST_CASE("an argument that is not a flag is a usage error") {
        CHECK(usage_error_of({"a.yaml"}).find("a.yaml") != std::string::npos);
        usage_error_of({"-config", "a.yaml"});
        usage_error_of({"--config", "a.yaml", "extra"});
    }

    TEST_CASE("a flag without a value is a usage error") {
        CHECK(usage_error_of({"--config"}).find("--config") != std::string::npos);
        usage_error_of({"--topic", "t", "--config"});
    }

    TEST_CASE("required returns the value of a given flag") {
        CHECK(parse({"--config", "a.yaml"}).required("config") == "a.yaml");
    }

    TEST_CASE("required throws a usage error naming a missing flag") {
        auto args = parse({"--topic", "t"});
        CHECK_THROWS_WITH_AS(args.required("config"), doctest::Contains("--config"), UsageError);
    }

    TEST_CASE("get_int parses an integer or falls back when the flag is absent") {
        CHECK(parse({"--count", "250"}).get_int("count", 7) == 250);
        CHECK(parse({"--count=-3"}).get_int("count", 7) == -3);
        CHECK(parse({}).get_int("count", 7) == 7);
    }

    TEST_CASE("get_int refuses what is not a whole integer") {
        for (const char* bad : {"abc", "12abc", "1.5", "", "99999999999999999999"}) {
            CAPTURE(bad);
            auto args = parse({std::string("--count=") + bad});
            CHECK_THROWS_WITH_AS(args.get_int("count", 0), doctest::Contains("--count"),
                                 UsageError);
        }
    }

    TEST_CASE("get_double parses a number or falls back when the flag is absent") {
        CHECK(parse({"--ratio", "0.25"}).get_double("ratio", 0.1) == doctest::Approx(0.25));
        CHECK(parse({"--ratio=1"}).get_double("ratio", 0.1) == doctest::Approx(1.0));
        CHECK(parse({}).get_double("ratio", 0.1) == doctest::Approx(0.1));
    }

    TEST_CASE("get_double refuses what is not a number") {
        for (const char* bad : {"abc", "0.5x", ""}) {
            CAPTURE(bad);
            auto args = parse({std::string("--ratio=") + bad});
            CHECK_THROWS_WITH_AS(args.get_double("ratio", 0), doctest::Contains("--ratio"),
                                 UsageError);
        }
    }

    TEST_CASE("a switch takes no value, wherever it stands, and has() tells it was given") {
        auto args = parse({"--print", "--config", "a.yaml"});
        CHECK(args.has("print"));
        CHECK(args.get("config") == "a.yaml");
        CHECK(parse({"--config", "a.yaml", "--print"}).has("print"));
        CHECK_FALSE(parse({"--config", "a.yaml"}).has("print"));
        CHECK(usage_error_of({"--print=yes"}).find("--print takes no value") != std::string::npos);
    }
}
