#include "config/yaml_reader.hpp"

#include <algorithm>
#include <charconv>

#include "config/env_expansion.hpp"
#include "core/duration_text.hpp"

namespace exo::config_reading {
namespace {

std::string bounds_text(Bounds b) {
    if (b.max == INT_MAX || b.max == kPositiveMs.max || b.max == kPositiveBytes.max)
        return "must be at least " + std::to_string(b.min);
    return "must be between " + std::to_string(b.min) + " and " + std::to_string(b.max);
}

// The line (1-based) of `text`, or "" past its end.
std::string_view line_text(std::string_view text, int line) {
    for (int i = 1; i < line && !text.empty(); ++i) {
        const std::size_t newline = text.find('\n');
        text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    }
    return text.substr(0, text.find('\n'));
}

}  // namespace

int line_of_node(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    return mark.line >= 0 ? mark.line + 1 : 0;
}

std::string kind_of(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return "the value " + in_quotes(node.Scalar());
        default:
            return "nothing";
    }
}

std::optional<std::string> scalar_text(Context& ctx, const YAML::Node& node,
                                       const std::string& path, int line, std::string_view what) {
    if (node.IsNull()) {
        ctx.add(path, line, "has no value: give " + std::string(what));
        return std::nullopt;
    }
    if (!node.IsScalar()) {
        ctx.add(path, line, "expected " + std::string(what) + ", got " + kind_of(node));
        return std::nullopt;
    }
    EnvExpansion expanded = expand_env(node.Scalar(), ctx.env);
    for (std::string& error : expanded.errors) ctx.add(path, line, std::move(error));
    if (!expanded.errors.empty()) return std::nullopt;
    return std::move(expanded.text);
}

Reader::Reader(Context& ctx, const YAML::Node& node, std::string path, int line,
               const std::optional<Keys>& known)
    : ctx_(ctx), path_(std::move(path)), line_(line) {
    if (node.IsNull()) return;
    if (!node.IsMap()) {
        ctx_.add(path_, line_, "expected a mapping of 'key: value' lines, got " + kind_of(node));
        is_map_ = false;
        return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) add_entry(it->first, it->second, known);
}

std::string Reader::path_of(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

int Reader::line_of(std::string_view key) const {
    const Entry* entry = find(key);
    return entry ? entry->line : line_;
}

void Reader::problem(std::string_view key, std::string message) const {
    ctx_.add(path_of(key), line_of(key), std::move(message));
}

bool Reader::require(std::string_view key, std::string_view hint) const {
    if (has(key)) return true;
    if (!is_map_) return false;
    problem(key, "required key is missing: " + std::string(hint));
    return false;
}

Reader Reader::map(std::string_view key, const std::optional<Keys>& known) const {
    const Entry* entry = find(key);
    return Reader(ctx_, entry ? entry->value : YAML::Node(), path_of(key), line_of(key), known);
}

std::vector<Item> Reader::list(std::string_view key) const {
    std::vector<Item> items;
    const Entry* entry = find(key);
    if (!entry || entry->value.IsNull()) return items;
    if (!entry->value.IsSequence()) {
        problem(key, "expected a list ('- item' lines or [a, b]), got " + kind_of(entry->value));
        return items;
    }
    std::size_t index = 0;
    for (const YAML::Node& element : entry->value) {
        const int line = element.IsNull() ? entry->line : line_of_node(element);
        items.push_back({element, path_of(key) + "[" + std::to_string(index++) + "]", line});
    }
    return items;
}

YAML::Node Reader::node(std::string_view key) const {
    const Entry* entry = find(key);
    return entry ? entry->value : YAML::Node();
}

std::optional<std::string> Reader::scalar(std::string_view key, std::string_view what) const {
    const Entry* entry = find(key);
    if (!entry) return std::nullopt;
    return scalar_text(ctx_, entry->value, path_of(key), entry->line, what);
}

void Reader::read(std::string_view key, std::string& out, Text rule) const {
    std::optional<std::string> text = scalar(key, "a string");
    if (!text) return;
    if (rule == Text::non_empty && text->empty()) {
        problem(key, "must not be empty: give a value");
        return;
    }
    out = std::move(*text);
}

void Reader::read(std::string_view key, int& out, Bounds bounds) const {
    if (const auto value = integer(key, bounds, Unit::count)) out = static_cast<int>(*value);
}

void Reader::read(std::string_view key, std::size_t& out, Bounds bounds) const {
    if (const auto value = integer(key, bounds, Unit::count))
        out = static_cast<std::size_t>(*value);
}

void Reader::read(std::string_view key, std::chrono::milliseconds& out, Bounds bounds) const {
    if (const auto value = integer(key, bounds, Unit::milliseconds))
        out = std::chrono::milliseconds(*value);
}

void Reader::read_days(std::string_view key, std::chrono::hours& out, Bounds bounds) const {
    if (const auto value = integer(key, bounds, Unit::days)) out = std::chrono::hours(*value * 24);
}

std::optional<long long> Reader::integer(std::string_view key, Bounds bounds, Unit unit) const {
    const std::optional<std::string> text =
        scalar(key, unit == Unit::count ? "a whole number" : "a duration");
    if (!text) return std::nullopt;
    long long value = 0;
    const char* end = text->data() + text->size();
    const auto [stop, ec] = std::from_chars(text->data(), end, value);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc{} && stop == end && (value < bounds.min || value > bounds.max))) {
        problem(key, bounds_text(bounds) + ", got " + *text);
        return std::nullopt;
    }
    if (ec != std::errc{} || stop != end) {
        switch (unit) {
            case Unit::milliseconds:
                problem(key, not_whole_milliseconds(*text));
                break;
            case Unit::days:
                problem(key, "expected a whole number of days (e.g. 30), got " + in_quotes(*text));
                break;
            case Unit::count:
                problem(key, "expected a whole number, got " + in_quotes(*text));
                break;
        }
        return std::nullopt;
    }
    return value;
}

const Reader::Entry* Reader::find(std::string_view key) const {
    const auto it = std::find_if(entries_.begin(), entries_.end(),
                                 [&](const Entry& e) { return e.key == key; });
    return it == entries_.end() ? nullptr : &*it;
}

void Reader::add_entry(const YAML::Node& key_node, const YAML::Node& value,
                       const std::optional<Keys>& known) {
    const int line = line_of_node(key_node);
    if (!key_node.IsScalar()) {
        ctx_.add(path_, line, "keys must be plain names, got " + kind_of(key_node));
        return;
    }
    const std::string& key = key_node.Scalar();
    if (const Entry* first = find(key)) {
        ctx_.add(path_of(key), line,
                 "duplicate key (first given at line " + std::to_string(first->line) +
                     "): keep only one");
        return;
    }
    if (known && std::find(known->begin(), known->end(), key) == known->end()) {
        had_unknown_keys_ = true;
        const auto best = closest(key, *known);
        ctx_.add(path_of(key), line,
                 "unknown key " + in_quotes(key) +
                     (best ? "; did you mean " + in_quotes(*best) + "?"
                           : "; known keys here: " + join(*known, ", ")));
        return;
    }
    entries_.push_back({key, value, line});
}

ConfigProblem yaml_syntax_problem(std::string_view yaml, const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    std::string message = "YAML syntax error: " + e.msg + "; fix the YAML at this line";
    // A '}' ends a { flow } mapping, so an unquoted ${VAR} inside one breaks it.
    const std::string_view text = line_text(yaml, line);
    if (text.find("${") != std::string_view::npos && text.find_first_of("{[") < text.find("${")) {
        message += " (inside { } or [ ], quote a value that uses ${VAR}: port: \"${PORT}\")";
    }
    return {"", line, std::move(message)};
}

}  // namespace exo::config_reading
