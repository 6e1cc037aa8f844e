#include "config/yaml_writer.hpp"

#include "core/secrets.hpp"

namespace exo::yaml_writer {

std::string literal(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') out += '$';
        out += text[i];
    }
    return out;
}

std::string secret(std::string_view value) {
    return value.empty() ? std::string() : std::string(kSecretMask);
}

void begin_map(YAML::Emitter& out, std::string_view key, bool empty) {
    out << YAML::Key << std::string(key) << YAML::Value;
    if (empty) out << YAML::Flow;
    out << YAML::BeginMap;
}

void end_map(YAML::Emitter& out) {
    out << YAML::EndMap;
}

void text(YAML::Emitter& out, std::string_view key, std::string_view value) {
    out << YAML::Key << std::string(key) << YAML::Value << YAML::DoubleQuoted << literal(value);
}

void texts(YAML::Emitter& out, std::string_view key, const std::vector<std::string>& values) {
    out << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& v : values) out << YAML::DoubleQuoted << literal(v);
    out << YAML::EndSeq;
}

void number(YAML::Emitter& out, std::string_view key, long long value) {
    out << YAML::Key << std::string(key) << YAML::Value << value;
}

void boolean(YAML::Emitter& out, std::string_view key, bool value) {
    out << YAML::Key << std::string(key) << YAML::Value << value;
}

}  // namespace exo::yaml_writer
