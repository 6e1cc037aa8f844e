// parse_config_text and parse_config_file (config_parser.hpp): YAML loaded once,
// each top-level section handed to its reader (sections.hpp), the rules that
// span sections checked, and every problem thrown at once as a ConfigError.
#include "config/config_parser.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "config/env_expansion.hpp"
#include "config/sections.hpp"
#include "config/yaml_reader.hpp"

namespace exo {
namespace {

using config_reading::Context;
using config_reading::Keys;
using config_reading::Reader;

// docs/design.md#two-fences: the Redis COMPLETED record is a cache of the dedup row, so the row
// must outlive it, or a redelivery after the row is gone would run again.
void check_retention(const Config& config, const Reader& claim, const Reader& postgres) {
    if (config.claim.completed_ttl < config.postgres.dedup_retention) return;
    const bool ttl_given = claim.has("completed_ttl_ms");
    const Reader& at = ttl_given ? claim : postgres;
    at.problem(
        ttl_given ? "completed_ttl_ms" : "dedup_retention_days",
        "claim.completed_ttl_ms (" + std::to_string(config.claim.completed_ttl.count()) +
            " ms) must be less than postgres.dedup_retention_days (" +
            std::to_string(config.postgres.dedup_retention.count() / 24) +
            " days = " + std::to_string(milliseconds(config.postgres.dedup_retention).count()) +
            " ms): dedup rows must outlive the Redis COMPLETED record; lower completed_ttl_ms "
            "or raise dedup_retention_days");
}

// claim.store: postgres never connects to Redis (docs/design.md#two-fences): a
// key that only configures Redis would do nothing, and whoever reads the file
// would believe a Redis fence stands in front of the dedup row. Refused, not
// ignored, each with the way out.
void check_claim_store(const Config& config, const Reader& top, const Reader& claim,
                       const Reader& pipeline) {
    if (config.claim.in_redis()) return;
    const std::string why = " claim.store is postgres, so exo never connects to Redis: remove ";
    const std::string or_redis = ", or set claim.store: redis to keep claims in Redis";
    if (top.has("redis")) top.problem("redis", "is given, but" + why + "the section" + or_redis);
    for (const std::string_view key : {"lease_ms", "completed_ttl_ms", "verify_duplicates"})
        if (claim.has(key))
            claim.problem(key, "is a setting of Redis claims, but" + why + "the key" + or_redis);
    if (pipeline.has("on_redis_down"))
        pipeline.problem("on_redis_down",
                         "says what to do while Redis is down, but" + why + "the key" + or_redis);
}

// ordering: key or entity says different keys run at once; with two batches at
// once they would hardly, so a file that does not set the concurrency gets one
// that does (PipelineConfig::concurrency).
void default_lane_concurrency(Config& config, const config_reading::Reader& pipeline) {
    if (pipeline.has("concurrency")) return;
    const bool lanes =
        std::any_of(config.bindings.begin(), config.bindings.end(),
                    [](const BindingConfig& b) { return b.ordering != Ordering::partition; });
    if (lanes) config.pipeline.concurrency = PipelineConfig::kLaneConcurrency;
}

// The top-level keys: every section's name, then bindings.
Keys top_keys() {
    Keys keys;
    config_schema::for_each_section(
        [&](const auto& section, auto) { keys.push_back(section.name()); });
    keys.push_back("bindings");
    return keys;
}

Config read_config(Context& ctx, const YAML::Node& root, const std::vector<std::string>& handlers) {
    static const Keys kTopKeys = top_keys();
    const Reader top(ctx, root, "", 0, kTopKeys);
    Config config;
    if (!top.is_map()) return config;
    // Each mapping is opened once (opening reports its unknown keys), and kept
    // for the rules that span sections.
    std::map<std::string_view, Reader> sections;
    config_schema::for_each_section([&](const auto& section, auto member) {
        const Reader& mapping =
            sections.emplace(section.name(), top.map(section.name(), section.names()))
                .first->second;
        config.*member = section.read(mapping);
    });
    config.bindings = config_reading::read_bindings(top, handlers);
    // The rules between sections.
    config.outbox.emit_limits = config_schema::outbox_emit_limits(config.kafka);
    const Reader& claim = sections.at("claim");
    const Reader& pipeline = sections.at("pipeline");
    default_lane_concurrency(config, pipeline);
    // Without Redis there is no COMPLETED record for the dedup row to outlive.
    if (config.claim.in_redis()) check_retention(config, claim, sections.at("postgres"));
    check_claim_store(config, top, claim, pipeline);
    return config;
}

}  // namespace

Config parse_config_text(std::string_view yaml, const std::string& source_name,
                         const std::vector<std::string>& known_handlers, const EnvLookup& env) {
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml));
    } catch (const YAML::Exception& e) {
        throw ConfigError(source_name, {config_reading::yaml_syntax_problem(yaml, e)});
    }
    Context ctx{env, {}, source_name};
    Config config = read_config(ctx, root, known_handlers);
    if (ctx.problems.empty()) return config;
    // Document order reads best; problems without a line (missing top-level
    // sections) come last.
    std::stable_sort(ctx.problems.begin(), ctx.problems.end(),
                     [](const ConfigProblem& a, const ConfigProblem& b) {
                         const int la = a.line > 0 ? a.line : INT_MAX;
                         const int lb = b.line > 0 ? b.line : INT_MAX;
                         return la < lb;
                     });
    throw ConfigError(source_name, std::move(ctx.problems));
}

Config parse_config_file(const std::string& path, const std::vector<std::string>& known_handlers) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        throw ConfigError(
            path, {{"", 0, "is a directory, not a config file: give the path of exo.yaml"}});
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw ConfigError(path,
                          {{"", 0,
                            std::string("cannot open the config file (") + std::strerror(errno) +
                                "): check the path and its permissions"}});
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        throw ConfigError(
            path, {{"", 0, "cannot read the config file: check the path and its permissions"}});
    }
    return parse_config_text(text.str(), path, known_handlers, process_env);
}

}  // namespace exo
