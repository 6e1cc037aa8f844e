// exo as a library, end to end: the `exo` of handlers/ (scripts/test.sh builds it
// out of tree against the installed package, with find_package(exo)) migrates
// exo's tables and its own, checks its configuration and handler options, and
// runs exactly once, as a separate process against the real servers, allocating
// with the allocator exo was built with (jemalloc, EXO_JEMALLOC).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <fstream>
#include <pqxx/pqxx>
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

// Runs the consumer binary with `args` to its end (at most 60 s).
exo::testing::FinishedChild run_to_end(const std::string& name,
                                       const std::vector<std::string>& args) {
    const std::string log_file = "/tmp/" + exo::testing::unique_name(name) + ".log";
    auto finished = exo::testing::run_to_end(exo::testing::exo_binary(), args, {}, log_file, 60s);
    REQUIRE_MESSAGE(finished.has_value(), "still running after 60 s: " << log_file);
    return *finished;
}

// The harness's config file with `extra` appended to its (only) binding.
std::string write_config(const PipelineHarness& h, const std::string& extra,
                         const std::string& uri = {}) {
    std::string yaml = h.config_yaml();
    if (!uri.empty()) yaml.replace(yaml.find(h.postgres_uri()), h.postgres_uri().size(), uri);
    std::string path = "/tmp/" + h.schema() + "-" + std::to_string(yaml.size()) + ".yaml";
    std::ofstream(path) << yaml << extra;
    return path;
}

}  // namespace

TEST_CASE(
    "the consumer built against the installed package migrates exo's tables and then its own, "
    "and refuses to run on a schema that lacks one, naming it") {
    PipelineHarness h({.name = "app_migrate", .partitions = 1});
    const std::string fresh = "t_" + h.schema() + "_fresh";
    {
        pqxx::connection c(exo::testing::postgres_uri());
        pqxx::nontransaction(c).exec("CREATE SCHEMA " + fresh);
    }
    const std::string uri = exo::testing::postgres_uri() + "?options=-csearch_path%3D" + fresh;
    const std::string config = write_config(h, "", uri);

    auto refused = run_to_end("app_run_early", {"run", "--config", config});
    CHECK(refused.exit_code == 2);
    CHECK(refused.output.find("0002_ledger.sql") != std::string::npos);

    auto migrated = run_to_end("app_migrate", {"migrate", "--config", config});
    CHECK(migrated.exit_code == 0);
    pqxx::connection c(uri);
    pqxx::nontransaction tx(c);
    // exo's own first, then the application's, each once.
    auto names = tx.exec("SELECT name FROM exo_schema_migrations ORDER BY applied_at, name");
    std::vector<std::string> applied;
    for (const auto& row : names) applied.push_back(row[0].as<std::string>());
    CHECK(applied ==
          std::vector<std::string>{
              "0001_exo_core.sql", "0003_exo_sequence_gaps.sql", "0004_exo_applied_by.sql",
              "0005_exo_replays.sql", "0006_exo_outbox.sql", "0007_exo_outbox_units.sql",
              "0008_exo_retention.sql", "0009_exo_sequence_advances.sql",
              "0010_exo_outbox_lean.sql", "0011_exo_processes.sql", "0012_dead_letter_digest.sql",
              "0013_exo_key_fingerprint.sql", "0014_exo_outbox_pending_order.sql",
              "0015_exo_hot_counters.sql", "0016_exo_outbox_pending_key.sql", "0002_ledger.sql"});
    CHECK(tx.exec("SELECT to_regclass('accounts') IS NOT NULL")[0][0].as<bool>());
    auto again = run_to_end("app_migrate_again", {"migrate", "--config", config});
    CHECK(again.exit_code == 0);
    CHECK(again.output.find("schema is up to date") != std::string::npos);
}

TEST_CASE(
    "the consumer built with find_package(exo) allocates with the allocator exo was built with") {
    // jemalloc prints its statistics at exit when MALLOC_CONF asks; glibc ignores the variable.
    const std::string log_file = "/tmp/" + exo::testing::unique_name("app_allocator") + ".log";
    auto finished = exo::testing::run_to_end(exo::testing::exo_binary(), {"--version"},
                                             {{"MALLOC_CONF", "stats_print:true"}}, log_file, 60s);
    REQUIRE(finished.has_value());
    CHECK(finished->exit_code == 0);
    const bool jemalloc_stats =
        finished->output.find("Begin jemalloc statistics") != std::string::npos;
#ifdef EXO_JEMALLOC_LINKED
    CHECK_MESSAGE(jemalloc_stats,
                  "the installed package's consumer does not run on jemalloc "
                  "(exoConfig.cmake finds it for exo::framework): "
                      << log_file);
#else
    CHECK_MESSAGE(!jemalloc_stats, log_file);
#endif
}

TEST_CASE("check-config reports a bad handler option with its YAML path and line, exit 2") {
    PipelineHarness h({.name = "app_options_bad", .partitions = 1});
    const std::string config = write_config(h, "    options: {max_amount: lots}\n");
    auto checked = run_to_end("app_check_bad", {"check-config", "--config", config});
    CHECK(checked.exit_code == 2);
    CHECK(checked.output.find("bindings[0].options.max_amount") != std::string::npos);
    CHECK(checked.output.find("expected a whole number") != std::string::npos);

    const std::string good = write_config(h, "    options: {max_amount: 100}\n");
    CHECK(run_to_end("app_check_good", {"check-config", "--config", good}).exit_code == 0);
}

TEST_CASE(
    "the consumer built against the installed package runs exactly once, its handler "
    "configured by the binding's options") {
    PipelineHarness h({.name = "app_run", .partitions = 2});
    const std::string config = write_config(h, "    options: {max_amount: 100}\n");
    h.produce({payment("a-1", "acc-1", 10, 1, 0), payment("a-2", "acc-1", 20, 2, 0),
               payment("a-1", "acc-1", 10, 1, 1), payment("big-1", "acc-2", 500, 1, 1),
               payment("b-1", "acc-3", 100, 1, 1)});
    const std::string log_file = "/tmp/" + h.schema() + "-run.log";
    ChildProcess child(exo::testing::exo_binary(), {"run", "--config", config}, {}, log_file);
    REQUIRE(h.wait_until_consumed(60s));
    child.signal(SIGTERM);
    auto status = child.wait(30s);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 30}, {"acc-3", 100}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'big-1' AND outcome "
                  "= 'DEAD_LETTERED' AND result LIKE '%max_amount 100%'") == 1);
}

TEST_CASE(
    "the example consumer's demo commands, registered with Application::command, are listed by "
    "--help, produce a workload and check that the running consumer applied it exactly once") {
    auto help = run_to_end("app_help", {"--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("exo demo-produce (--bootstrap SERVERS") != std::string::npos);
    CHECK(help.output.find("exo demo-check --config FILE") != std::string::npos);
    auto no_config = run_to_end("app_demo_usage", {"demo-check", "--expected-file", "x"});
    CHECK(no_config.exit_code == 2);
    CHECK(no_config.output.find("--config is required") != std::string::npos);

    PipelineHarness h({.name = "app_demo", .partitions = 2});
    const std::string config = write_config(h, "");
    const std::string expected = "/tmp/" + h.schema() + "-expected.json";
    auto produced =
        run_to_end("app_demo_produce",
                   {"demo-produce", "--bootstrap", h.bootstrap(), "--topic", h.topic(), "--count",
                    "120", "--accounts", "5", "--partitions", "2", "--expected-file", expected});
    REQUIRE(produced.exit_code == 0);
    CHECK(produced.output.find("produced 120 payments") != std::string::npos);

    const std::string log_file = "/tmp/" + h.schema() + "-run.log";
    ChildProcess child(exo::testing::exo_binary(), {"run", "--config", config}, {}, log_file);
    auto checked = run_to_end("app_demo_check",
                              {"demo-check", "--config", config, "--bootstrap", h.bootstrap(),
                               "--expected-file", expected, "--timeout", "50"});
    CHECK_MESSAGE(checked.exit_code == 0, checked.output);
    CHECK(checked.output.find("OK: every payment applied exactly once") != std::string::npos);
    child.signal(SIGTERM);
    CHECK(child.wait(30s).has_value());
}
