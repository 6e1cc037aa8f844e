#pragma once
// Reads exo.yaml into Config (config.hpp). config/ is the only place that
// knows YAML: the rest of the program sees plain structs. Parsing never stops
// at the first mistake; every problem in the file is collected and reported at
// once, each naming its YAML path and line, so one run of `exo` shows what to
// fix.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/errors.hpp>
#include "config/config.hpp"
#include "config/env_expansion.hpp"  // EnvLookup

namespace exo {

struct ConfigProblem {
    std::string path;     // e.g. "bindings[0].key.header"; empty for the document as a whole
    int line = 0;         // 1-based; 0 if unknown
    std::string message;  // what is wrong and how to fix it
};

// Bad configuration: the process cannot start (a UsageError, exit code 2).
// what() lists every problem, one per line, as "<source>:<line>: <path>: <message>"
// (":<line>" is left out when the line is unknown, "<path>: " when the problem
// concerns the whole document). Bytes that are not valid UTF-8, and NUL, are
// shown as U+FFFD: messages quote the input.
class ConfigError : public UsageError {
public:
    ConfigError(const std::string& source, std::vector<ConfigProblem> problems);

    const std::string& source() const noexcept { return source_; }
    const std::vector<ConfigProblem>& problems() const noexcept { return problems_; }

private:
    struct Printable {};  // the problems are already made printable
    ConfigError(std::string source, std::vector<ConfigProblem> problems, Printable);

    std::string source_;
    std::vector<ConfigProblem> problems_;
};

// Parses a whole exo.yaml document. `source_name` only labels problems (usually
// the file path). `known_handlers` are the handler names registered in this
// binary; a binding naming another one is a problem. `env` resolves ${NAME} and
// ${NAME:-default} in scalar values, not in keys ("$${" writes a literal "${");
// an empty `env` means no variable is set.
// Throws ConfigError listing every problem found. Thread-safe if `env` is.
Config parse_config_text(std::string_view yaml, const std::string& source_name,
                         const std::vector<std::string>& known_handlers, const EnvLookup& env);

// Reads and parses the file at `path`, resolving ${NAME} from the process
// environment (getenv). Throws ConfigError naming the path if the file cannot be
// read, and as parse_config_text otherwise.
Config parse_config_file(const std::string& path, const std::vector<std::string>& known_handlers);

}  // namespace exo
