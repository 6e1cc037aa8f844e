#pragma once
// `exo check-config --print`: the effective configuration as exo.yaml text.
#include <string>

#include "config/config.hpp"

namespace exo {

// `config` as YAML exo loads again: every key with its value, defaults filled in
// (absent only where absence is the setting: kafka.mock or bootstrap_servers,
// mock.bootstrap_file, observability.listen, a binding's sequence), bindings and
// their options included. Secrets (core/secrets.hpp) are printed as "*****", and
// a literal "${" is written "$${" so the text means the same when read again:
// printing what this prints, parsed, gives the same text.
std::string effective_config_yaml(const Config& config);

}  // namespace exo
