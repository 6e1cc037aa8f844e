#include "config/env_expansion.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace exo {
namespace {

bool valid_env_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
    return std::all_of(name.begin(), name.end(),
                       [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

}  // namespace

std::optional<std::string> process_env(const std::string& name) {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
}

EnvExpansion expand_env(std::string_view in, const EnvLookup& env) {
    EnvExpansion out;
    std::size_t i = 0;
    while (i < in.size()) {
        if (in.substr(i, 3) == "$${") {
            out.text += "${";
            i += 3;
            continue;
        }
        if (in.substr(i, 2) != "${") {
            out.text += in[i++];
            continue;
        }
        const std::size_t close = in.find('}', i + 2);
        if (close == std::string_view::npos) {
            out.errors.emplace_back(
                "'${' is never closed: write ${NAME} or ${NAME:-default}, or '$${' for a literal "
                "'${'");
            return out;
        }
        const std::string_view body = in.substr(i + 2, close - i - 2);
        i = close + 1;
        const std::size_t sep = body.find(":-");
        const std::string_view name = body.substr(0, sep);
        if (!valid_env_name(name)) {
            out.errors.push_back("${" + std::string(body) +
                                 "} does not name a variable: use letters, digits and '_', not "
                                 "starting with a digit");
            continue;
        }
        const std::optional<std::string> value = env ? env(std::string(name)) : std::nullopt;
        if (sep != std::string_view::npos && (!value || value->empty())) {
            out.text += body.substr(sep + 2);
        } else if (value) {
            out.text += *value;
        } else {
            out.errors.push_back("environment variable " + std::string(name) +
                                 " is not set: export it, or give a default as ${" +
                                 std::string(name) + ":-value}");
        }
    }
    return out;
}

}  // namespace exo
