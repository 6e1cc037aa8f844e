// exo/options.hpp: a binding's `options:` map, converted on request. The
// messages follow the config readers' (config/yaml_reader.cpp), so a bad
// option reads like every other config problem.
#include <exo/options.hpp>

#include "core/duration_text.hpp"
#include "core/message_text.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

namespace exo {
namespace {

// from_chars takes '-' but not '+'; the header promises an optional sign. Only a
// '+' before a digit (or '.') is dropped, so "+-5" stays malformed.
std::string_view without_plus(std::string_view text) {
    if (text.size() > 1 && text.front() == '+' &&
        (std::isdigit(static_cast<unsigned char>(text[1])) || text[1] == '.')) {
        text.remove_prefix(1);
    }
    return text;
}

enum class Parsed { ok, malformed, out_of_range };

Parsed parse_int64(std::string_view text, std::int64_t& out) {
    text = without_plus(text);
    const char* end = text.data() + text.size();
    const auto [stop, ec] = std::from_chars(text.data(), end, out);
    if (ec == std::errc::result_out_of_range && stop == end) return Parsed::out_of_range;
    if (ec != std::errc{} || stop != end || text.empty()) return Parsed::malformed;
    return Parsed::ok;
}

std::optional<bool> parse_boolean(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "true" || lower == "yes" || lower == "on") return true;
    if (lower == "false" || lower == "no" || lower == "off") return false;
    return std::nullopt;
}

}  // namespace

HandlerOptions::HandlerOptions(std::string source, std::string path,
                               std::map<std::string, Value> values, int line)
    : source_(std::move(source)),
      path_(std::move(path)),
      line_(line),
      values_(std::make_move_iterator(values.begin()), std::make_move_iterator(values.end())) {}

bool HandlerOptions::has(std::string_view key) const {
    return values_.find(key) != values_.end();
}

std::vector<std::string> HandlerOptions::keys() const {
    std::vector<std::string> out;
    out.reserve(values_.size());
    for (const auto& entry : values_) out.push_back(entry.first);
    return out;
}

void HandlerOptions::fail(std::string_view key, const std::string& message) const {
    const auto it = values_.find(key);
    const int line = it != values_.end() ? it->second.line : line_;
    // Messages quote the input, which may hold any bytes: made printable (as
    // ConfigError does) so a NUL does not cut what() short.
    std::string text;
    if (!source_.empty()) {
        text += printable_text(source_, 4096);
        if (line > 0) text += ":" + std::to_string(line);
        text += ": ";
    }
    const std::string full_key = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    text += printable_text(full_key, 1024) + ": " + printable_text(message, 4096);
    throw OptionError(text);
}

const HandlerOptions::Value& HandlerOptions::required(std::string_view key) const {
    const auto it = values_.find(key);
    if (it == values_.end()) {
        fail(key, "required option is missing: add it under " +
                      (path_.empty() ? std::string("the binding's options") : path_));
    }
    return it->second;
}

std::string HandlerOptions::string(std::string_view key) const {
    return required(key).text;
}

std::string HandlerOptions::string(std::string_view key, std::string fallback) const {
    return has(key) ? required(key).text : std::move(fallback);
}

std::int64_t HandlerOptions::integer(std::string_view key) const {
    const std::string& text = required(key).text;
    std::int64_t value = 0;
    switch (parse_int64(text, value)) {
        case Parsed::ok:
            return value;
        case Parsed::out_of_range:
            fail(key, "expected a whole number between " +
                          std::to_string(std::numeric_limits<std::int64_t>::min()) + " and " +
                          std::to_string(std::numeric_limits<std::int64_t>::max()) + ", got " +
                          in_quotes(text));
        case Parsed::malformed:
            break;
    }
    fail(key, "expected a whole number, got " + in_quotes(text));
}

std::int64_t HandlerOptions::integer(std::string_view key, std::int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
}

double HandlerOptions::number(std::string_view key) const {
    const std::string& text = required(key).text;
    const std::string_view digits = without_plus(text);
    const char* end = digits.data() + digits.size();
    double value = 0;
    const auto [stop, ec] = std::from_chars(digits.data(), end, value);
    if (stop == end && !digits.empty() &&
        (ec == std::errc::result_out_of_range || (ec == std::errc{} && !std::isfinite(value)))) {
        fail(key, "expected a finite number, got " + in_quotes(text));
    }
    if (ec != std::errc{} || stop != end || digits.empty()) {
        fail(key, "expected a number (e.g. 0.25), got " + in_quotes(text));
    }
    return value;
}

double HandlerOptions::number(std::string_view key, double fallback) const {
    return has(key) ? number(key) : fallback;
}

bool HandlerOptions::boolean(std::string_view key) const {
    const std::string& text = required(key).text;
    if (const std::optional<bool> value = parse_boolean(text)) return *value;
    fail(key, "expected true or false (or yes/no, on/off), got " + in_quotes(text));
}

bool HandlerOptions::boolean(std::string_view key, bool fallback) const {
    return has(key) ? boolean(key) : fallback;
}

std::chrono::milliseconds HandlerOptions::milliseconds(std::string_view key) const {
    const std::string& text = required(key).text;
    std::int64_t value = 0;
    const Parsed parsed = parse_int64(text, value);
    if (parsed == Parsed::ok && value >= 0) return std::chrono::milliseconds(value);
    if (parsed == Parsed::ok || (parsed == Parsed::out_of_range && text.front() == '-')) {
        fail(key, "must be at least 0, got " + in_quotes(text));
    }
    if (parsed == Parsed::out_of_range) {
        fail(key, "must be at most " + std::to_string(std::numeric_limits<std::int64_t>::max()) +
                      ", got " + in_quotes(text));
    }
    fail(key, not_whole_milliseconds(text));
}

std::chrono::milliseconds HandlerOptions::milliseconds(std::string_view key,
                                                       std::chrono::milliseconds fallback) const {
    return has(key) ? milliseconds(key) : fallback;
}

}  // namespace exo
