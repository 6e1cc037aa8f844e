#pragma once
// Writing exo.yaml text (check-config --print): the one place that knows how a
// value is written so that it reads back the same.
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

namespace exo::yaml_writer {

// Values are read through ${ENV} expansion: a literal "${" is written "$${".
std::string literal(std::string_view text);

// A secret as printed: "*****", or "" for an empty one (an empty password
// means "no AUTH": nothing to hide, and masking it would change its meaning).
std::string secret(std::string_view value);

// "key:" opening a mapping; an empty one reads best as "key: {}".
void begin_map(YAML::Emitter& out, std::string_view key, bool empty = false);
void end_map(YAML::Emitter& out);

// Always quoted: a value such as "true", "123" or "*****" stays text, and the
// output shows which values are text.
void text(YAML::Emitter& out, std::string_view key, std::string_view value);
// A flow list of quoted texts.
void texts(YAML::Emitter& out, std::string_view key, const std::vector<std::string>& values);
void number(YAML::Emitter& out, std::string_view key, long long value);
void boolean(YAML::Emitter& out, std::string_view key, bool value);

}  // namespace exo::yaml_writer
