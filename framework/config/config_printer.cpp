// effective_config_yaml (config_printer.hpp): each scalar section printed by
// its table (sections.hpp, schema.hpp), with the key names and spellings the
// reader takes, so the output parses back; the bindings by their table too.
#include "config/config_printer.hpp"

#include <yaml-cpp/yaml.h>

#include "config/sections.hpp"

namespace exo {

std::string effective_config_yaml(const Config& config) {
    using namespace config_schema;
    YAML::Emitter out;
    out << YAML::BeginMap;
    for_each_section(
        [&](const auto& section, auto member) { section.print(out, config.*member, config); });
    print_bindings(out, config);
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace exo
