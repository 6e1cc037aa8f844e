#pragma once
// A scenario's changes to the daemon config written as exo.yaml paths
// ("claim.store=postgres", "pipeline.batch_size=500", "bindings[0].options.x=1"),
// applied by exo's own config code: the Config is printed as exo.yaml
// (effective_config_yaml), each path set in that document, and the document
// parsed again (parse_config_text). So every key exo.yaml has works here with no
// code in the benchmark, and a wrong key or value fails with the parser's message.
#include <string>
#include <vector>

#include "config/config.hpp"

namespace exo::bench {

struct ConfigOverride {
    std::string path;   // exo.yaml path: map keys joined by '.', a list element as name[i]
    std::string value;  // read as YAML: "postgres", "500", "[a, b]"; "~" removes the key
};

// "path=value" ("path=~": leave the key out, as a file without it would); throws
// std::invalid_argument for text without '=' or an empty path.
ConfigOverride parse_config_override(const std::string& text);

// `base` with `overrides` set. The secrets the printer masks (postgres.uri's password,
// redis.password) are taken from `base` unless an override sets them. Throws ConfigError
// (config/config_parser.hpp) when the result is not a valid exo.yaml (an unknown key names
// itself there), std::invalid_argument for a path that does not fit the document's shape.
Config apply_config_overrides(const Config& base, const std::vector<ConfigOverride>& overrides);

// "a=1,b=2" for names and reports.
std::string describe(const std::vector<ConfigOverride>& overrides);

}  // namespace exo::bench
