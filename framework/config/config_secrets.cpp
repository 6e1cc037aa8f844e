#include "config/config_secrets.hpp"

namespace exo {

std::vector<NamedSecret> named_secrets(const Config& config) {
    std::vector<NamedSecret> out;
    const auto add = [&](std::string path, const std::string& value) {
        if (!value.empty()) out.push_back({std::move(path), value});
    };
    for (const auto& [key, value] : config.kafka.properties)
        if (is_secret_key(key)) add("kafka.properties." + key, value);
    add("redis.password", config.redis.password);
    // Decoded: what libpq sends, and what its length says about its strength.
    const auto passwords = postgres_uri_passwords(config.postgres.uri);
    for (std::size_t i = 1; i < passwords.size(); i += 2)
        add("postgres.uri's password", passwords[i]);
    for (std::size_t b = 0; b < config.bindings.size(); ++b)
        for (const auto& key : config.bindings[b].options.keys())
            if (is_secret_key(key))
                add("bindings[" + std::to_string(b) + "].options." + key,
                    config.bindings[b].options.string(key));
    return out;
}

std::vector<std::string> config_secrets(const Config& config) {
    std::vector<std::string> out;
    for (auto& s : named_secrets(config)) out.push_back(std::move(s.value));
    // As written too (percent-encoded, quoted): libpq's errors quote that form.
    for (auto& p : postgres_uri_passwords(config.postgres.uri)) out.push_back(std::move(p));
    return out;
}

std::vector<std::string> weak_secret_warnings(const Config& config) {
    std::vector<std::string> out;
    for (const auto& s : named_secrets(config))
        // A value of '*' only is a mask (a config check-config --print wrote): no secret.
        if (s.value.size() < kMinMaskedSecretLength &&
            s.value.find_first_not_of('*') != std::string::npos)
            out.push_back(s.path + " is shorter than " + std::to_string(kMinMaskedSecretLength) +
                          " characters: exo masks it where it is written (check-config --print, "
                          "URIs) but not by value in log lines and error messages, where masking "
                          "so short a value would also mask ordinary words and so reveal it; use "
                          "a random secret of " +
                          std::to_string(kMinMaskedSecretLength) + " characters or more");
    return out;
}

}  // namespace exo
