#pragma once
// ${NAME} references in exo.yaml's scalar values (secrets, ports), resolved from
// the environment. Pure but for process_env: the lookup is passed in, so tests
// and the fuzzer give their own environment.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exo {

// Returns the value of an environment variable, or nullopt if it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment (getenv), as an EnvLookup.
std::optional<std::string> process_env(const std::string& name);

struct EnvExpansion {
    std::string text;                 // the input with every resolved reference replaced
    std::vector<std::string> errors;  // one per reference that could not be resolved
};

// ${NAME} and ${NAME:-default} (the default also when NAME is set but empty, as in
// the shell); "$${" is a literal "${". A '$' anywhere else is kept as it is, so
// passwords such as "pa$$word" survive. NAME is letters, digits and '_', not
// starting with a digit. An error message says what to write instead; an
// unclosed "${" ends the expansion. An empty `env` means no variable is set.
// Thread-safe if `env` is.
EnvExpansion expand_env(std::string_view in, const EnvLookup& env);

}  // namespace exo
