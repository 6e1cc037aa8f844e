#pragma once
// The secrets of one parsed configuration, by the rule of core/secrets.hpp:
// what check-config --print masks and what every log line and error message
// has redacted.
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/secrets.hpp"

namespace exo {

// Every secret value of `config` (after ${ENV} expansion), in every form a
// message may quote it (a postgres password as written in the URI and decoded).
std::vector<std::string> config_secrets(const Config& config);

// A Redactor for config_secrets(config).
inline Redactor config_redactor(const Config& config) {
    return Redactor(config_secrets(config));
}

}  // namespace exo
