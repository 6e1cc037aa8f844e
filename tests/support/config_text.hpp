#pragma once
// Helpers for the tests that parse exo.yaml text (config_test.cpp and the tests of
// single sections): the handlers they register, an environment, and the
// ConfigError a text gives.
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_parser.hpp"

namespace exo::testing::config_text {

inline const std::vector<std::string> kHandlers = {"ledger", "audit"};

inline EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

inline const EnvLookup kNoEnv = env_of({});

// The smallest valid file; tests append to or edit it.
inline constexpr std::string_view kMinimal = R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: exo-ledger
postgres:
  uri: postgresql://exo@localhost/exo
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
)";

// The YAML literals of the tests start with a newline so they can be indented like
// the file they stand for; it is dropped, so line 1 is the first line written.
inline std::string_view body(std::string_view yaml) {
    if (!yaml.empty() && yaml.front() == '\n') yaml.remove_prefix(1);
    return yaml;
}

inline Config parse(std::string_view yaml, const EnvLookup& env = kNoEnv) {
    return parse_config_text(body(yaml), "exo.yaml", kHandlers, env);
}

// The ConfigError parsing `yaml` throws; fails the test if it parses.
inline ConfigError error_of(std::string_view yaml, const EnvLookup& env = kNoEnv) {
    try {
        parse(yaml, env);
    } catch (const ConfigError& e) {
        return e;
    }
    FAIL("expected a ConfigError for:\n" << yaml);
    throw;  // not reached: FAIL throws
}

inline std::string errors_of(std::string_view yaml, const EnvLookup& env = kNoEnv) {
    return error_of(yaml, env).what();
}

}  // namespace exo::testing::config_text
