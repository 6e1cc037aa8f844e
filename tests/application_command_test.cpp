// An application's own commands (Application::command, exo/command.hpp): listed
// by --help after exo's, run with their flags, their errors reported like
// exo's own. In process, no servers.
#include <doctest/doctest.h>

#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <exo/application.hpp>

namespace {

// Application::main with `args` after the binary's name; what it printed.
struct Ran {
    int exit_code = 0;
    std::string out;
    std::string err;
};

Ran run(exo::Application& app, std::initializer_list<std::string> args) {
    std::vector<std::string> strings{"consumer"};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(strings.size() + 1);
    for (auto& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::ostringstream out, err;
    auto* old_out = std::cout.rdbuf(out.rdbuf());
    auto* old_err = std::cerr.rdbuf(err.rdbuf());
    Ran ran;
    ran.exit_code = app.main(static_cast<int>(strings.size()), argv.data());
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    ran.out = out.str();
    ran.err = err.str();
    return ran;
}

}  // namespace

TEST_CASE("--help lists an application's commands after exo's, with their flags and summary") {
    exo::Application app;
    app.command("seed", "--count N\n[--dry-run]", "write N sample rows\nand say how many",
                [](exo::CommandContext&) { return 0; });
    const auto help = run(app, {"--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("  exo run --config FILE") != std::string::npos);
    // Usage lines continue under the usage, as exo's own do.
    const auto seed =
        help.out.find("  exo seed --count N\n" + std::string(11, ' ') + "[--dry-run]\n");
    REQUIRE(seed != std::string::npos);
    CHECK(seed > help.out.find("exo mock-kafka"));
    CHECK(help.out.find(std::string(33, ' ') + "write N sample rows\n" + std::string(33, ' ') +
                        "and say how many\n") != std::string::npos);
    CHECK(help.out.find("exo --help | --version") > seed);
}

TEST_CASE(
    "an application's command runs with its own arguments and flags, and exits with its code") {
    exo::Application app;
    std::vector<std::string> seen_args;
    int count = 0;
    app.command("seed", "--count N", "write N sample rows", [&](exo::CommandContext& ctx) {
        seen_args = ctx.args();
        const auto flags = ctx.flags({"count"}, {"dry-run"});
        count = flags.get_int("count", 1);
        CHECK(ctx.name() == "seed");
        CHECK(flags.has("dry-run"));
        CHECK_FALSE(ctx.stop_token().stop_requested());
        return 7;
    });
    CHECK(run(app, {"seed", "--count=12", "--dry-run"}).exit_code == 7);
    CHECK(seen_args == std::vector<std::string>{"--count=12", "--dry-run"});
    CHECK(count == 12);
}

TEST_CASE("an application's command's errors exit 2 for bad usage and 1 for a failure, named") {
    exo::Application app;
    app.command("seed", "--count N", "write N sample rows", [](exo::CommandContext& ctx) {
        ctx.flags({"count"}).get_int("count", 1);
        throw std::runtime_error("the table is missing");
        return 0;
    });
    const auto unknown = run(app, {"seed", "--cuont", "3"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.err.find("unknown option --cuont") != std::string::npos);
    const auto failed = run(app, {"seed", "--count", "3"});
    CHECK(failed.exit_code == 1);
    CHECK(failed.err.find("exo seed: failed: the table is missing") != std::string::npos);
    CHECK(run(app, {"sed"}).exit_code == 2);  // unknown commands stay unknown
}

TEST_CASE("a command may not take an empty, flag-like, repeated name or one of exo's own") {
    exo::Application app;
    auto nothing = [](exo::CommandContext&) { return 0; };
    app.command("seed", "", "", nothing);
    CHECK_THROWS_AS(app.command("seed", "", "", nothing), exo::UsageError);
    CHECK_THROWS_AS(app.command("", "", "", nothing), exo::UsageError);
    CHECK_THROWS_AS(app.command("--seed", "", "", nothing), exo::UsageError);
    CHECK_THROWS_AS(app.command("two words", "", "", nothing), exo::UsageError);
    CHECK_THROWS_AS(app.command("run", "", "", nothing), exo::UsageError);
    CHECK_THROWS_AS(app.command("migrate", "", "", nothing), exo::UsageError);
    CHECK_THROWS_AS(app.command("report", "", "", nullptr), exo::UsageError);
}

TEST_CASE("a command reading the configuration before loading it is a bug reported as a failure") {
    exo::Application app;
    app.command("report", "", "",
                [](exo::CommandContext& ctx) { return static_cast<int>(ctx.group_id().size()); });
    const auto ran = run(app, {"report"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.err.find("before load_config()") != std::string::npos);
}
