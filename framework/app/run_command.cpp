// `exo run` and `exo migrate`: the composition root of the daemon. Services
// start in dependency order and stop in reverse (declaration order below): the
// observability endpoint (first, so probes answer "starting" while PostgreSQL's
// schema is awaited), the Kafka endpoint (and the wait for the topics exo produces
// to, protocol/produced_topics.hpp), then the daemon (batch runners, producers,
// consumer, retention pruner), served by the endpoint while it exists.
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "app/consumer_process.hpp"
#include "config/config_docs.hpp"
#include "config/config_printer.hpp"
#include "config/config_secrets.hpp"
#include "core/backoff.hpp"
#include "core/failpoints.hpp"
#include "kafka/topic_inspection.hpp"
#include "observability/health.hpp"
#include "observability/http_endpoint.hpp"
#include "pg/migrations.hpp"
#include "pg/session.hpp"
#include "protocol/produced_topics.hpp"
#include "runtime/daemon.hpp"

namespace exo {
namespace {

// PostgreSQL may still be starting: wait for it (it is the correctness fence,
// nothing runs without it) but refuse to run on an old schema.
bool schema_ready(const Config& config, const std::vector<Migration>& migrations,
                  std::stop_token stop) {
    Backoff backoff{config.pipeline.retry_backoff_initial, config.pipeline.retry_backoff_max};
    for (int attempt = 1; !stop.stop_requested(); ++attempt) {
        try {
            auto c = open_postgres_session(config.postgres);
            auto pending = pending_migrations(*c, migrations);
            if (pending.empty()) return true;
            std::string names;
            for (const auto& name : pending) names += (names.empty() ? "" : ", ") + name;
            throw UsageError("the database lacks migration(s) " + names +
                             ": run `migrate --config FILE` with this binary first");
        } catch (const pqxx::broken_connection& e) {
            auto delay = backoff.delay(attempt, 0.5);
            spdlog::warn("PostgreSQL unreachable, retrying in {} ms: {}", delay.count(), e.what());
            std::this_thread::sleep_for(delay);
        }
    }
    return false;
}

// Sleeps `delay` or until a stop is requested; false when it was.
bool wait_or_stop(std::chrono::milliseconds delay, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    return !cv.wait_for(lock, stop, delay, [] { return false; }) && !stop.stop_requested();
}

// The topics exo produces to must exist before the consumer joins (produced_topics.hpp says
// why it waits): until then the daemon is not ready, and it says which topics and keys. Also
// learns each topic's max.message.bytes for emit()'s check. False when stopped first.
bool produced_topics_ready(Config& config, const std::string& bootstrap,
                           ObservabilityEndpoint* endpoint, std::stop_token stop) {
    const auto topics = produced_topics(config);
    std::vector<std::string> names;
    for (const auto& t : topics) names.push_back(t.topic);
    const auto client = topic_check_client(bootstrap, config.kafka);
    Backoff backoff{config.pipeline.retry_backoff_initial, config.pipeline.retry_backoff_max};
    for (int attempt = 1; !stop.stop_requested(); ++attempt) {
        auto delay = backoff.delay(attempt, 0.5);
        try {
            const auto seen = inspect_topics(client, names, std::chrono::seconds(10));
            if (const auto problem = missing_topics_problem(topics, seen); !problem.empty()) {
                delay = std::max(delay, config.pipeline.retry_backoff_max);
                if (endpoint) endpoint->starting("starting: waiting for Kafka topics: " + problem);
                spdlog::error("not ready: {}. Checking again in {} ms", problem, delay.count());
                if (!wait_or_stop(delay, stop)) return false;
                continue;
            }
            if (const auto warning = missing_topics_warning(topics, seen); !warning.empty())
                spdlog::warn("{}", warning);
            // Only outbox.topics' limits are used (a dead letter over its topic's goes
            // without its value), so only their absence is worth a warning.
            if (!seen.limits_unknown.empty() && !config.outbox.topics.empty())
                spdlog::warn(
                    "the brokers did not tell every topic's max.message.bytes ({}): emits to "
                    "those topics are checked against the producer's message.max.bytes ({}) "
                    "only",
                    seen.limits_unknown, config.outbox.emit_limits.producer_bytes());
            learn_topic_limits(config.outbox.emit_limits, seen, config.outbox.topics);
            for (const auto& [topic, bytes] : config.outbox.emit_limits.topics())
                spdlog::info(
                    "topic '{}' takes record batches of up to {} bytes (max.message.bytes)", topic,
                    bytes);
            return true;
        } catch (const KafkaError& e) {
            if (!e.retriable()) throw;
            if (endpoint) endpoint->starting("starting: checking the Kafka topics exo produces to");
            spdlog::warn("not ready: checking the topics exo produces to, retrying in {} ms: {}",
                         delay.count(), e.what());
            if (!wait_or_stop(delay, stop)) return false;
        }
    }
    return false;
}

}  // namespace

int run_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors,
                std::stop_token stop) {
    Arguments args("run", argc, argv, 2, {"config"});
    return run_with_config(args.required("config"), setup.handlers, errors, [&](Config& config) {
        for (const auto& warning : weak_secret_warnings(config)) spdlog::warn("{}", warning);
        std::optional<ObservabilityEndpoint> endpoint;
        if (config.observability.enabled())
            endpoint.emplace(*config.observability.listen,
                             liveness_bound(config.pipeline.shutdown_timeout, config.claim.lease));
        if (!schema_ready(config, setup.all_migrations(), stop)) return 0;
        auto failpoints = Failpoints::from_environment();
        KafkaEndpoint kafka(config);
        if (!produced_topics_ready(config, kafka.bootstrap_servers(),
                                   endpoint ? &*endpoint : nullptr, stop))
            return 0;
        ConsumerProcess process(config, setup.handlers, failpoints, kafka.bootstrap_servers());
        AttachedDaemon served(endpoint ? &*endpoint : nullptr, process.daemon());
        process.run(stop);
        return 0;
    });
}

int migrate_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("migrate", argc, argv, 2, {"config"});
    return run_with_config(args.required("config"), setup.handlers, errors, [&](Config& config) {
        const auto migrations = setup.all_migrations();
        // The record-level limits do not fit a migration: an index build may run
        // for minutes, and a second `exo migrate` must wait on the advisory lock
        // for the first, not fail after lock_timeout. 0 leaves the server's settings.
        PostgresConfig session = config.postgres;
        session.statement_timeout = std::chrono::milliseconds(0);
        session.lock_timeout = std::chrono::milliseconds(0);
        auto c = open_postgres_session(session);
        auto applied = apply_migrations(*c, migrations);
        if (applied.empty()) spdlog::info("schema is up to date");
        for (const auto& name : applied) spdlog::info("applied migration {}", name);
        return 0;
    });
}

int check_config_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("check-config", argc, argv, 2, {"config"}, {"print"});
    const std::string path = args.required("config");
    return run_with_config(path, setup.handlers, errors, [&](Config& config) {
        // Each binding's factory once, so a bad or missing handler option fails here
        // (exit 2) and not when the daemon starts.
        for (const auto& binding : config.bindings)
            setup.handlers.create(binding.handler, binding.options);
        // On stderr: --print's output stays a loadable config.
        for (const auto& warning : weak_secret_warnings(config))
            errors.print("check-config", "warning: " + warning);
        const std::string verdict =
            path + ": valid (" + std::to_string(config.bindings.size()) + " binding(s))";
        if (!args.has("print")) {
            std::printf("%s\n", verdict.c_str());
            return 0;
        }
        // The verdict as a YAML comment keeps the output loadable as it is.
        std::printf("# %s\n# the effective configuration: defaults filled in, secrets masked\n%s",
                    verdict.c_str(), effective_config_yaml(config).c_str());
        return 0;
    });
}

int config_docs_command(int argc, char** argv) {
    Arguments args("config-docs", argc, argv, 2, {"write"});
    const std::string tables = configuration_tables();
    const std::optional<std::string> path = args.get("write");
    if (!path) {
        std::fputs(tables.c_str(), stdout);
        return 0;
    }
    std::ifstream in(*path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) throw UsageError("cannot read " + *path);
    const std::optional<std::string> updated = with_tables(text.str(), tables);
    if (!updated) throw UsageError(*path + " has no generated-tables markers");
    std::ofstream out(*path, std::ios::binary | std::ios::trunc);
    out << *updated;
    if (!out.flush()) throw std::runtime_error("cannot write " + *path);
    return 0;
}

}  // namespace exo
