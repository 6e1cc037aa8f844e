#pragma once
// The secrets of one parsed configuration, by the rule of core/secrets.hpp:
// what check-config --print masks, what every log line and error message has
// redacted, and which of them are too weak for that rule to protect.
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/secrets.hpp"

namespace exo {

// One configured secret: where it is set ("redis.password",
// "kafka.properties.sasl.password", "bindings[0].options.api_key", "postgres.uri's
// password") and its value after ${ENV} expansion, as exo and libpq read it.
struct NamedSecret {
    std::string path;
    std::string value;
};

// Every non-empty secret of `config`, in the order of the file's sections.
std::vector<NamedSecret> named_secrets(const Config& config);

// Every secret value of `config`, in every form a message may quote it (a
// postgres password as written in the URI and decoded).
std::vector<std::string> config_secrets(const Config& config);

// A Redactor for config_secrets(config).
inline Redactor config_redactor(const Config& config) {
    return Redactor(config_secrets(config));
}

// One line per secret shorter than kMinMaskedSecretLength, naming it: such a
// secret is not masked by value in log lines and error messages (core/secrets.hpp
// says why), so a message quoting it alone would show it. check-config prints
// these; `run` logs them. A warning, not a refusal: the password is the
// server's, and refusing it would stop a deployment that works.
std::vector<std::string> weak_secret_warnings(const Config& config);

}  // namespace exo
