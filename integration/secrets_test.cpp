// No command, log line or error message of the real `exo` binary prints a secret of
// its configuration (core/secrets.hpp), and logging.format json gives only JSON lines.
// The servers of scripts/services.sh have no passwords: PostgreSQL trusts loopback and
// ignores the URI's password, Redis refuses AUTH (so the daemon runs with
// on_redis_down: postgres_only, and Redis' refusal is one of the errors checked), and
// the SASL password goes to a plaintext connection that never uses it. What is
// checked is only that these distinctive strings never appear.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "child_process.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::ChildProcess;
using exo::testing::payment;
using exo::testing::PipelineHarness;

namespace {

constexpr const char* kRedisSecret = "redis-SECRET-7f3a";
constexpr const char* kPostgresSecret = "pg-SECRET-91c2";
constexpr const char* kSaslSecret = "sasl-SECRET-5d8e";  // given through ${EXO_TEST_SASL}

const std::map<std::string, std::string> kEnv = {{"EXO_TEST_SASL", kSaslSecret}};

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void replace_once(std::string& text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, "no '" << from << "' in:\n" << text);
    text.replace(at, from.size(), to);
}

// The harness's config with the three secrets, debug logging in `format`, and
// librdkafka's configuration dump switched on.
std::string secret_config(const PipelineHarness& h, const std::string& format,
                          const std::string& postgres_uri = {}) {
    std::string yaml = h.config_yaml();
    const std::string uri = postgres_uri.empty() ? h.postgres_uri() : postgres_uri;
    replace_once(yaml, h.postgres_uri(), uri);
    replace_once(yaml, "postgresql://exo@",
                 std::string("postgresql://exo:") + kPostgresSecret + "@");
    replace_once(yaml, "redis: {", std::string("redis: {password: \"") + kRedisSecret + "\", ");
    replace_once(yaml, "properties: {",
                 "properties: {sasl.username: alice, sasl.password: \"${EXO_TEST_SASL}\", debug: "
                 "\"conf,security\", ");
    replace_once(yaml, "pipeline: {", "pipeline: {on_redis_down: postgres_only, ");
    replace_once(yaml, "logging: {level: info}", "logging: {level: debug, format: " + format + "}");
    std::string path = "/tmp/" + exo::testing::unique_name(h.schema() + "-" + format) + ".yaml";
    std::ofstream(path) << yaml;
    return path;
}

void check_no_secret(const std::string& text, const std::string& where) {
    for (const char* secret : {kRedisSecret, kPostgresSecret, kSaslSecret}) {
        CAPTURE(secret);
        CHECK_MESSAGE(text.find(secret) == std::string::npos, where << " prints a secret:\n"
                                                                    << text);
    }
}

struct Finished {
    int exit_code = -1;
    std::string output;
};

Finished run_to_end(const std::string& name, const std::vector<std::string>& args) {
    const std::string log_file = "/tmp/" + exo::testing::unique_name(name) + ".log";
    ChildProcess child(exo::testing::exo_binary(), args, kEnv, log_file);
    auto status = child.wait(60s);
    REQUIRE_MESSAGE(status.has_value(), "still running after 60 s: " << log_file);
    return {WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, read_all(log_file)};
}

// Every non-empty line of `text` is a JSON object with the four fields every line has.
void check_json_lines(const std::string& text) {
    std::istringstream lines(text);
    int count = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        ++count;
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const std::exception& e) {
            FAIL_CHECK("not a JSON line: " << line << " (" << e.what() << ")");
            continue;
        }
        CHECK_MESSAGE(j.is_object(), line);
        for (const char* field : {"time", "level", "logger", "message"})
            CHECK_MESSAGE(j.contains(field), line);
    }
    CHECK(count > 0);
}

// Runs the daemon until `done` says so from its log (at most 60 s), then SIGTERM; the log.
template <typename Done>
std::string run_daemon(const std::string& config, const std::string& name, Done done) {
    const std::string log_file = "/tmp/" + exo::testing::unique_name(name) + ".log";
    ChildProcess child(exo::testing::exo_binary(), {"run", "--config", config}, kEnv, log_file);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline && !done(read_all(log_file)))
        std::this_thread::sleep_for(200ms);
    child.signal(SIGTERM);
    const auto status = child.wait(30s);
    CHECK_MESSAGE(status.has_value(), "did not stop on SIGTERM: " << log_file);
    return read_all(log_file);
}

}  // namespace

TEST_SUITE("secrets") {
    TEST_CASE(
        "check-config --print masks the redis, postgres and SASL passwords, one from ${ENV}, "
        "and what it prints is a config exo loads") {
        PipelineHarness h({.name = "secrets_print", .partitions = 1});
        const auto printed = run_to_end(
            "secrets_print", {"check-config", "--config", secret_config(h, "json"), "--print"});
        CHECK(printed.exit_code == 0);
        check_no_secret(printed.output, "check-config --print");
        CHECK(printed.output.find("password: \"*****\"") != std::string::npos);
        CHECK(printed.output.find("sasl.password: \"*****\"") != std::string::npos);
        CHECK(printed.output.find("postgresql://exo:*****@") != std::string::npos);

        const std::string again = "/tmp/" + exo::testing::unique_name("secrets_printed") + ".yaml";
        std::ofstream(again) << printed.output;
        const auto reprinted =
            run_to_end("secrets_reprint", {"check-config", "--config", again, "--print"});
        CHECK(reprinted.exit_code == 0);
        // Only the first comment line (it names the file) differs.
        CHECK(reprinted.output.substr(reprinted.output.find('\n')) ==
              printed.output.substr(printed.output.find('\n')));
    }

    TEST_CASE(
        "the daemon's debug logs, text and json, never show a configured secret, and json "
        "logs are JSON lines only") {
        for (const std::string format : {"text", "json"}) {
            CAPTURE(format);
            PipelineHarness h({.name = "secrets_logs_" + format, .partitions = 2});
            h.produce({payment("s-1", "acc-1", 10, 1, 0), payment("s-2", "acc-2", 20, 1, 1)});
            const std::string log =
                run_daemon(secret_config(h, format), "secrets_logs_" + format,
                           [&](const std::string&) { return h.wait_until_consumed(1s); });
            CHECK(h.count("SELECT count(*) FROM ledger_entries") == 2);
            // The lines that could quote a secret were written: librdkafka's
            // configuration dump and Redis refusing AUTH.
            CHECK_MESSAGE(log.find("sasl.password") != std::string::npos, log);
            CHECK_MESSAGE(log.find("AUTH") != std::string::npos, log);
            check_no_secret(log, format + " logs");
            if (format == "json") check_json_lines(log);
        }
    }

    TEST_CASE(
        "PostgreSQL unreachable, or a URI libpq refuses quoting it, is reported without the "
        "password") {
        PipelineHarness h({.name = "secrets_down", .partitions = 1});
        const std::string down = std::string("postgresql://exo@127.0.0.1:1/exo");
        const std::string log = run_daemon(
            secret_config(h, "text", down), "secrets_pg_down", [](const std::string& text) {
                return text.find("PostgreSQL unreachable") != std::string::npos;
            });
        CHECK_MESSAGE(log.find("PostgreSQL unreachable") != std::string::npos, log);
        check_no_secret(log, "run with PostgreSQL unreachable");

        // A bad percent escape in the password: libpq's error quotes the password as written.
        const std::string bad = "postgresql://exo@127.0.0.1:1/exo";
        std::string config = secret_config(h, "text", bad);
        std::string yaml = read_all(config);
        replace_once(yaml, std::string("exo:") + kPostgresSecret,
                     std::string("exo:%zz") + kPostgresSecret);
        std::ofstream(config) << yaml;
        const auto refused = run_to_end("secrets_bad_uri", {"migrate", "--config", config});
        CHECK(refused.exit_code == 1);
        CHECK_MESSAGE(refused.output.find("*****") != std::string::npos, refused.output);
        check_no_secret(refused.output, "migrate with a URI libpq refuses");
    }

    TEST_CASE(
        "every operator command reports a URI libpq refuses without its password: dlq list, dlq "
        "replay, inspect, sequence advance, outbox list, discard and reroute") {
        PipelineHarness h({.name = "secrets_cli", .partitions = 1});
        // A bad percent escape in the password: libpq's error quotes the password as written.
        std::string config = secret_config(h, "text", "postgresql://exo@127.0.0.1:1/exo");
        std::string yaml = read_all(config);
        replace_once(yaml, std::string("exo:") + kPostgresSecret,
                     std::string("exo:%zz") + kPostgresSecret);
        std::ofstream(config) << yaml;
        const std::vector<std::vector<std::string>> commands = {
            {"dlq", "list", "--config", config},
            {"dlq", "replay", "--config", config, "--all"},
            {"inspect", "--config", config, "--key", "k-1"},
            {"sequence", "advance", "--config", config, "--entity", "acc-1", "--to", "5",
             "--reason", "poison"},
            {"outbox", "list", "--config", config},
            {"outbox", "discard", "--config", config, "--id", "1"},
            {"outbox", "reroute", "--config", config, "--id", "1", "--topic", "elsewhere"},
        };
        for (const auto& args : commands) {
            const std::string name =
                args[0] + (args[1].starts_with("--") ? std::string() : " " + args[1]);
            CAPTURE(name);
            const auto refused = run_to_end("secrets_cli", args);
            CHECK_MESSAGE(refused.exit_code == 1, refused.output);
            // libpq's complaint is there, its quote masked.
            CHECK_MESSAGE(refused.output.find("invalid percent-encoded token") != std::string::npos,
                          refused.output);
            CHECK_MESSAGE(refused.output.find("*****") != std::string::npos, refused.output);
            check_no_secret(refused.output, name + " with a URI libpq refuses");
        }
    }

    TEST_CASE(
        "a record key with a newline and a terminal escape forges no line in the daemon's text "
        "log, exo dlq list or exo inspect") {
        PipelineHarness h({.name = "secrets_escape", .partitions = 1});
        const std::string forged_line = "[2026-01-01 00:00:00.000] [exo] [info] all is well";
        const std::string key = "evil\n" + forged_line + "\x1b[2J";
        h.produce({payment(key, "acc-1", 500, 1)});
        // The ledger refuses payments above max_amount: the record is dead-lettered and its
        // key logged.
        std::string yaml = h.config_yaml();
        replace_once(yaml, "    key: {json: /eventId}\n",
                     "    key: {json: /eventId}\n    options: {max_amount: \"100\"}\n");
        const std::string config =
            "/tmp/" + exo::testing::unique_name(h.schema() + "-escape") + ".yaml";
        std::ofstream(config) << yaml;
        const std::string log = run_daemon(config, "secrets_escape", [&](const std::string&) {
            return h.wait_until_consumed(1s);
        });
        const std::string escaped = "evil\\n" + forged_line;
        const auto check_escaped = [&](const std::string& text, const std::string& where) {
            CAPTURE(where);
            CHECK_MESSAGE(text.find("\n" + forged_line) == std::string::npos, text);
            CHECK_MESSAGE(text.find('\x1b') == std::string::npos, text);
            CHECK_MESSAGE(text.find(escaped) != std::string::npos, text);
        };
        check_escaped(log, "the daemon's text log");

        const auto listed = run_to_end("secrets_escape_list", {"dlq", "list", "--config", config});
        CHECK(listed.exit_code == 0);
        check_escaped(listed.output, "exo dlq list");
        const auto inspected =
            run_to_end("secrets_escape_inspect", {"inspect", "--config", config, "--key", key});
        CHECK(inspected.exit_code == 0);
        check_escaped(inspected.output, "exo inspect");
    }
}
