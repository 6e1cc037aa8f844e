#include "config/config_docs.hpp"

#include <vector>

#include "config/sections.hpp"

namespace exo {
namespace {

constexpr std::string_view kBegin =
    "<!-- BEGIN generated key tables: edit framework/config/*_section.cpp, then run "
    "`exo config-docs --write docs/configuration.md` -->\n";
constexpr std::string_view kEnd = "<!-- END generated key tables -->\n";

void table(std::string& out, std::string_view heading,
           const std::vector<config_schema::DocRow>& rows) {
    out += "\n### `" + std::string(heading) + "`\n\n";
    out += "| key | default | meaning |\n| --- | --- | --- |\n";
    for (const config_schema::DocRow& row : rows)
        out += "| `" + row.key + "` | " + row.default_text + " | " + row.meaning + " |\n";
}

}  // namespace

std::string configuration_tables() {
    std::string out;
    config_schema::for_each_section([&](const auto& section, auto) {
        table(out, section.name(), section.doc_rows(section.name()));
    });
    table(out, "bindings", config_schema::binding_doc_rows());
    out += "\n";
    return out;
}

std::optional<std::string> committed_tables(std::string_view document) {
    const std::size_t begin = document.find(kBegin);
    const std::size_t end = document.find(kEnd);
    if (begin == std::string_view::npos || end == std::string_view::npos || end < begin)
        return std::nullopt;
    const std::size_t from = begin + kBegin.size();
    return std::string(document.substr(from, end - from));
}

std::optional<std::string> with_tables(std::string_view document, std::string_view tables) {
    const std::size_t begin = document.find(kBegin);
    const std::size_t end = document.find(kEnd);
    if (begin == std::string_view::npos || end == std::string_view::npos || end < begin)
        return std::nullopt;
    return std::string(document.substr(0, begin + kBegin.size())) + std::string(tables) +
           std::string(document.substr(end));
}

}  // namespace exo
