#pragma once
// docs/configuration.md's key tables, generated from the config schema
// (schema.hpp, the *_section.cpp tables): one table per section, between two
// marker lines of that file. `exo config-docs --write docs/configuration.md`
// rewrites them; a unit test (config_docs_test.cpp) fails while the committed
// tables differ from these.
#include <optional>
#include <string>
#include <string_view>

namespace exo {

// The command that regenerates the committed tables, for messages.
inline constexpr std::string_view kConfigDocsCommand =
    "build/exo config-docs --write docs/configuration.md";

// The generated text between the markers (the tables with their headings).
std::string configuration_tables();

// The text between the markers of a docs file, or nullopt without both markers.
std::optional<std::string> committed_tables(std::string_view document);

// `document` with the text between its markers replaced by `tables`, or nullopt
// without both markers.
std::optional<std::string> with_tables(std::string_view document, std::string_view tables);

}  // namespace exo
