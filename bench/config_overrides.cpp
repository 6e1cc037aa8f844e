#include "config_overrides.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "config/config_parser.hpp"
#include "config/config_printer.hpp"

namespace exo::bench {
namespace {

// One step of a path: a map key, or a list index.
struct Step {
    std::string key;
    int index = -1;  // >= 0: element `index` of the list at `key`
};

std::vector<Step> steps_of(const std::string& path) {
    std::vector<Step> steps;
    std::size_t from = 0;
    while (from <= path.size()) {
        auto dot = path.find('.', from);
        auto part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        if (part.empty())
            throw std::invalid_argument("config path '" + path + "' has an empty part");
        Step s;
        auto open = part.find('[');
        if (open != std::string::npos && part.back() == ']') {
            s.key = part.substr(0, open);
            s.index = std::stoi(part.substr(open + 1, part.size() - open - 2));
        } else {
            s.key = part;
        }
        steps.push_back(s);
        if (dot == std::string::npos) break;
        from = dot + 1;
    }
    return steps;
}

// Sets `value` at `path` in `doc`, creating the maps on the way (yaml-cpp's operator[] on a
// non-const node adds the key), or removes the key when `value` is null. A list element
// must exist already.
void set_path(YAML::Node doc, const std::string& path, const YAML::Node& value) {
    auto steps = steps_of(path);
    YAML::Node node = doc;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const bool last = i + 1 == steps.size();
        YAML::Node next = node[steps[i].key];
        if (steps[i].index >= 0) {
            if (!next.IsSequence() || static_cast<std::size_t>(steps[i].index) >= next.size())
                throw std::invalid_argument("config path '" + path + "': " + steps[i].key +
                                            " has no element " + std::to_string(steps[i].index));
            // reset(), not operator=: assigning a Node overwrites the list it refers to
            // with the element (yaml-cpp assigns values, reset() rebinds the handle).
            YAML::Node element = next[static_cast<std::size_t>(steps[i].index)];
            next.reset(element);
        }
        if (last) {
            if (!value.IsNull()) {
                next = value;
            } else if (steps[i].index < 0) {
                node.remove(steps[i].key);
            } else {
                throw std::invalid_argument("config path '" + path +
                                            "': a list element cannot be removed");
            }
            return;
        }
        node.reset(next);
    }
}

}  // namespace

ConfigOverride parse_config_override(const std::string& text) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw std::invalid_argument("'" + text + "' is not an exo.yaml path=value");
    return {text.substr(0, eq), text.substr(eq + 1)};
}

Config apply_config_overrides(const Config& base, const std::vector<ConfigOverride>& overrides) {
    if (overrides.empty()) return base;
    YAML::Node doc = YAML::Load(effective_config_yaml(base));
    bool sets_uri = false, sets_redis_password = false;
    for (const auto& o : overrides) {
        set_path(doc, o.path, YAML::Load(o.value));
        sets_uri = sets_uri || o.path == "postgres.uri";
        sets_redis_password = sets_redis_password || o.path == "redis.password";
    }
    YAML::Emitter out;
    out << doc;
    std::vector<std::string> handlers;
    for (const auto& b : base.bindings) handlers.push_back(b.handler);
    // No environment: the printer writes a literal "${" as "$${", so nothing is expanded.
    auto config = parse_config_text(out.c_str(), "benchmark overrides " + describe(overrides),
                                    handlers, [](const std::string&) { return std::nullopt; });
    if (!sets_uri) config.postgres.uri = base.postgres.uri;
    if (!sets_redis_password) config.redis.password = base.redis.password;
    return config;
}

std::string describe(const std::vector<ConfigOverride>& overrides) {
    std::string out;
    for (const auto& o : overrides) out += (out.empty() ? "" : ",") + o.path + "=" + o.value;
    return out;
}

}  // namespace exo::bench
