#include "config/config_secrets.hpp"

namespace exo {

std::vector<std::string> config_secrets(const Config& config) {
    std::vector<std::string> out = postgres_uri_passwords(config.postgres.uri);
    out.push_back(config.redis.password);
    for (const auto& [key, value] : config.kafka.properties)
        if (is_secret_key(key)) out.push_back(value);
    for (const auto& binding : config.bindings)
        for (const auto& key : binding.options.keys())
            if (is_secret_key(key)) out.push_back(binding.options.string(key));
    return out;  // empty values included: Redactor ignores them
}

}  // namespace exo
