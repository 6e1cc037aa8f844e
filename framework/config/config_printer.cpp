// effective_config_yaml (config_printer.hpp): each scalar section printed by
// its table (sections.hpp, schema.hpp), with the key names and spellings the
// reader takes, so the output parses back; the bindings by hand, like their reader.
#include "config/config_printer.hpp"

#include <yaml-cpp/yaml.h>

#include "config/sections.hpp"
#include "config/yaml_writer.hpp"
#include "core/secrets.hpp"

namespace exo {
namespace {

using config_schema::name_of;
using yaml_writer::literal;
using yaml_writer::secret;

class BindingPrinter {
public:
    explicit BindingPrinter(YAML::Emitter& out) : out_(out) {}

    void bindings(const std::vector<BindingConfig>& bindings) {
        out_ << YAML::Key << "bindings" << YAML::Value << YAML::BeginSeq;
        for (const auto& b : bindings) binding(b);
        out_ << YAML::EndSeq;
    }

private:
    void binding(const BindingConfig& b) {
        out_ << YAML::BeginMap;
        text("topic", b.topic);
        text("handler", b.handler);
        if (b.key.kind == KeySourceKind::coordinates) {
            text("key", "coordinates");
        } else if (b.key.kind == KeySourceKind::hash) {
            const HashKeySpec& h = b.key.hash;
            begin("key");
            begin("hash", h.fields.empty() && h.exclude.empty() && !h.prefix_topic);
            if (!h.fields.empty()) texts("fields", h.fields);
            if (!h.exclude.empty()) texts("exclude", h.exclude);
            if (h.prefix_topic) yaml_writer::boolean(out_, "prefix_topic", true);
            end();
            end();
        } else {
            begin("key");
            text(b.key.kind == KeySourceKind::header ? "header" : "json", b.key.name);
            end();
        }
        if (b.sequence) {
            begin("sequence");
            text("entity", b.sequence->entity_pointer);
            text("value", b.sequence->value_pointer);
            text("mode", name_of(config_reading::kSequenceModes, b.sequence->mode));
            text("scope", name_of(config_reading::kSequenceScopes, b.sequence->scope));
            ms("gap_timeout_ms", b.sequence->gap_timeout);
            end();
        }
        text("ordering", name_of(config_reading::kOrderings, b.ordering));
        number("max_attempts", b.max_attempts);
        text("dead_letter_topic", b.dead_letter_topic);
        text("on_key_reuse", name_of(config_reading::kKeyReusePolicies, b.on_key_reuse));
        begin("options", b.options.empty());
        for (const auto& key : b.options.keys()) {
            const std::string value = b.options.string(key);
            text(key, is_secret_key(key) ? secret(value) : mask_uri(value));
        }
        end();
        out_ << YAML::EndMap;
    }

    void begin(std::string_view key, bool empty = false) {
        yaml_writer::begin_map(out_, key, empty);
    }
    void end() { yaml_writer::end_map(out_); }
    void text(std::string_view key, std::string_view value) { yaml_writer::text(out_, key, value); }
    void texts(std::string_view key, const std::vector<std::string>& values) {
        yaml_writer::texts(out_, key, values);
    }
    void number(std::string_view key, long long value) { yaml_writer::number(out_, key, value); }
    void ms(std::string_view key, std::chrono::milliseconds value) { number(key, value.count()); }

    YAML::Emitter& out_;
};

}  // namespace

std::string effective_config_yaml(const Config& config) {
    using namespace config_schema;
    YAML::Emitter out;
    out << YAML::BeginMap;
    for_each_section(
        [&](const auto& section, auto member) { section.print(out, config.*member, config); });
    BindingPrinter(out).bindings(config.bindings);
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace exo
