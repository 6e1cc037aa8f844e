#include "core/conninfo.hpp"

#include <cctype>
#include <optional>

namespace exo::conninfo {
namespace {

std::optional<int> hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return std::nullopt;
}

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// A key=value value as libpq reads it: quotes removed, backslash escapes resolved.
std::string unescape(std::string_view raw) {
    if (!raw.empty() && raw.front() == '\'') {
        raw.remove_prefix(1);
        if (!raw.empty() && raw.back() == '\'') raw.remove_suffix(1);
    }
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 1 < raw.size()) ++i;
        out += raw[i];
    }
    return out;
}

}  // namespace

std::size_t uri_prefix_length(std::string_view text) noexcept {
    for (const std::string_view prefix : {"postgresql://", "postgres://"})
        if (text.starts_with(prefix)) return prefix.size();
    return 0;
}

std::size_t userinfo_end(std::string_view uri, std::size_t prefix) noexcept {
    const std::size_t at = uri.find_first_of("@/", prefix);
    if (at != std::string_view::npos && uri[at] == '@') return at;
    return std::string_view::npos;
}

std::size_t query_mark(std::string_view uri, std::size_t prefix) noexcept {
    const std::size_t at = userinfo_end(uri, prefix);
    return uri.find('?', at == std::string_view::npos ? prefix : at + 1);
}

// libpq decodes the keywords of a URI query too, so "keepalives%5Fidle" counts.
// A malformed escape is kept as it is: libpq will refuse the URI itself.
std::string percent_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size()) {
            const auto high = hex_value(text[i + 1]);
            const auto low = hex_value(text[i + 2]);
            if (high && low) {
                out += static_cast<char>(*high * 16 + *low);
                i += 2;
                continue;
            }
        }
        out += text[i];
    }
    return out;
}

std::string percent_encode(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (const unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 0x0F];
        }
    }
    return out;
}

std::vector<Parameter> uri_query_parameters(std::string_view uri, std::size_t query) {
    std::vector<Parameter> out;
    if (query == std::string_view::npos) return out;
    std::size_t start = query + 1;
    while (start < uri.size()) {
        std::size_t amp = uri.find('&', start);
        if (amp == std::string_view::npos) amp = uri.size();
        const std::string_view param = uri.substr(start, amp - start);
        const std::size_t eq = param.find('=');
        Parameter p;
        p.keyword = percent_decode(param.substr(0, eq));
        p.value_begin = eq == std::string_view::npos ? amp : start + eq + 1;
        p.value_end = amp;
        p.value = percent_decode(uri.substr(p.value_begin, p.value_end - p.value_begin));
        out.push_back(std::move(p));
        start = amp + 1;
    }
    return out;
}

std::vector<Parameter> key_value_parameters(std::string_view text) {
    std::vector<Parameter> out;
    std::size_t i = 0;
    const auto skip_spaces = [&] {
        while (i < text.size() && is_space(text[i])) ++i;
    };
    while (true) {
        skip_spaces();
        if (i == text.size()) break;
        const std::size_t start = i;
        while (i < text.size() && text[i] != '=' && !is_space(text[i])) ++i;
        Parameter p;
        p.keyword = std::string(text.substr(start, i - start));
        skip_spaces();
        if (i == text.size() || text[i] != '=') break;
        ++i;
        skip_spaces();
        p.value_begin = i;
        bool terminated = true;
        if (i < text.size() && text[i] == '\'') {
            for (++i; i < text.size() && text[i] != '\''; ++i)
                if (text[i] == '\\' && i + 1 < text.size()) ++i;
            terminated = i < text.size();
            if (terminated) ++i;
        } else {
            for (; i < text.size() && !is_space(text[i]); ++i)
                if (text[i] == '\\' && i + 1 < text.size()) ++i;
        }
        p.value_end = i;
        p.value = unescape(text.substr(p.value_begin, p.value_end - p.value_begin));
        out.push_back(std::move(p));
        if (!terminated) break;
    }
    return out;
}

}  // namespace exo::conninfo
