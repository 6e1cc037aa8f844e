#include "core/duration_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "core/message_text.hpp"

namespace exo {

std::optional<long long> with_unit_as_ms(std::string_view text) {
    const std::size_t unit_at = text.find_first_not_of("0123456789.");
    if (unit_at == 0 || unit_at == std::string_view::npos) return std::nullopt;
    double number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + unit_at, number);
    if (ec != std::errc{} || end != text.data() + unit_at) return std::nullopt;
    std::string_view unit = text.substr(unit_at);
    unit.remove_prefix(std::min(unit.find_first_not_of(' '), unit.size()));
    static const std::map<std::string_view, double> factors = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000}};
    const auto factor = factors.find(unit);
    if (factor == factors.end()) return std::nullopt;
    const double ms = number * factor->second;
    // Beyond long long the cast is undefined; such a value is no useful suggestion.
    if (ms != std::floor(ms) || !(ms < 9.2e18)) return std::nullopt;
    return static_cast<long long>(ms);
}

std::string not_whole_milliseconds(std::string_view text) {
    std::string message =
        "expected a duration in whole milliseconds (e.g. 1500), got " + in_quotes(text);
    if (const auto ms = with_unit_as_ms(text)) message += "; write " + std::to_string(*ms);
    return message;
}

}  // namespace exo
