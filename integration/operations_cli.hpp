#pragma once
// What the operator command tests share (operations_cli_test.cpp,
// strict_dead_letters_test.cpp): the real `exo` binary run to its end, the JSON
// it printed, the harness's config as a file, and the daemons that make and
// fix dead letters: the ledger refusing payments above 100 (its binding's
// max_amount) is the cause, the ledger without the limit is the cause fixed.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>

#include <exo/testing.hpp>
#include "child_process.hpp"
#include "ops/replayed_record.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

namespace exo::testing::ops {

using namespace std::chrono_literals;
using nlohmann::json;

using Finished = exo::testing::FinishedChild;

inline Finished exo_cli(const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& env = {}) {
    const std::string log_file = "/tmp/" + exo::testing::unique_name("ops_cli") + ".log";
    auto finished = exo::testing::run_to_end(exo::testing::exo_binary(), args, env, log_file, 90s);
    REQUIRE_MESSAGE(finished.has_value(), "still running after 90 s: " << log_file);
    return *finished;
}

// The JSON document a --json command printed (log lines may surround it): from
// the first line that opens it to the first line that closes it at column 0.
inline json json_of(const Finished& f) {
    std::istringstream in(f.output);
    std::string line, doc;
    bool inside = false;
    while (std::getline(in, line)) {
        if (!inside && (line == "{" || line == "[" || line == "[]")) inside = true;
        if (inside) doc += line + "\n";
        if (inside && (line == "}" || line == "]" || line == "[]")) break;
    }
    INFO("output: " << f.output);
    REQUIRE(!doc.empty());
    return json::parse(doc);
}

inline std::string write_config(const PipelineHarness& h) {
    std::string path = "/tmp/" + h.schema() + "-ops.yaml";
    std::ofstream(path) << h.config_yaml();
    return path;
}

// The cause: a ledger that refuses payments above 100 dead-letters them at once.
// (The harness's own ledger takes no options.) The config and registry of its daemon,
// for a test that keeps one running over several rounds (each daemon start is a
// group join, about 3 s on the mock cluster).
inline exo::Config refusing_config(const PipelineHarness& h) {
    exo::Config config = h.config();
    config.bindings[0].options = exo::testing::handler_options({{"max_amount", "100"}});
    return config;
}
inline exo::HandlerRegistry refusing_registry() {
    exo::HandlerRegistry registry;
    registry.add("ledger", [](const exo::HandlerOptions& options) {
        return std::make_unique<exo::handlers::LedgerHandler>(options);
    });
    return registry;
}

inline void consume_refusing_large_payments(const PipelineHarness& h) {
    const auto config = refusing_config(h);
    const auto registry = refusing_registry();
    RunningDaemon d(config, registry, h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
}

// The cause fixed: the same binding without the limit.
inline void consume_fixed(const PipelineHarness& h) {
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
}

inline std::int64_t topic_end(const PipelineHarness& h) {
    return partition_end(h.bootstrap(), h.topic());
}

inline std::string outcome(const PipelineHarness& h, const std::string& key) {
    pqxx::connection c(h.postgres_uri());
    pqxx::read_transaction tx(c);
    auto r = tx.exec_params(
        "SELECT outcome FROM exo_processed WHERE consumer_group = $1 AND idempotency_key = $2",
        h.config().kafka.group_id, key);
    return r.empty() ? "none" : r[0][0].as<std::string>();
}

inline int replayed_copies(const PipelineHarness& h, const std::string& key, std::size_t total) {
    int copies = 0;
    for (const auto& r : exo::testing::read_topic(h.bootstrap(), h.topic(), total))
        if (r.header(exo::kReplayedFromHeader) != nullptr &&
            r.value.find("\"" + key + "\"") != std::string::npos)
            ++copies;
    return copies;
}

}  // namespace exo::testing::ops
