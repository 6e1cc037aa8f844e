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

template <typename S>
void section(std::string& out, const config_schema::Section<S>& s) {
    table(out, s.name(), s.doc_rows(s.name()));
}

}  // namespace

std::string configuration_tables() {
    using namespace config_schema;
    std::string out;
    // kafka.mock's keys belong in kafka's table, after the key that opens them.
    std::vector<DocRow> kafka = kafka_section().doc_rows("kafka");
    std::vector<DocRow> mock = kafka_mock_section().doc_rows("kafka.mock");
    for (auto it = kafka.begin(); it != kafka.end(); ++it) {
        if (it->key == "kafka.mock") {
            kafka.insert(it + 1, mock.begin(), mock.end());
            break;
        }
    }
    table(out, "kafka", kafka);
    section(out, redis_section());
    section(out, postgres_section());
    section(out, claim_section());
    section(out, pipeline_section());
    section(out, logging_section());
    section(out, observability_section());
    section(out, outbox_section());
    section(out, retention_section());
    table(out, "bindings", binding_doc_rows());
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
