#include "pg/session.hpp"

#include <cctype>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace exo {
namespace {

using Keywords = std::set<std::string, std::less<>>;

// The length of the URI prefix, 0 for a key=value string. libpq's own test
// (fe-connect.c, uri_prefix_length): case-sensitive.
std::size_t uri_prefix_length(std::string_view conninfo) {
    for (const std::string_view prefix : {"postgresql://", "postgres://"})
        if (conninfo.starts_with(prefix)) return prefix.size();
    return 0;
}

// Where the query string's '?' is, as libpq finds it: after the user:password@
// part, which libpq reads up to the first '@' or '/', so a raw '?' in a password
// does not start the query.
std::size_t query_mark(std::string_view uri, std::size_t prefix) {
    std::size_t from = prefix;
    const std::size_t at = uri.find_first_of("@/", prefix);
    if (at != std::string_view::npos && uri[at] == '@') from = at + 1;
    return uri.find('?', from);
}

std::optional<int> hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return std::nullopt;
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

// The keywords of a URI's query string ("?a=1&b=2"), as libpq's
// conninfo_uri_parse_params splits it.
Keywords uri_keywords(std::string_view uri, std::size_t query) {
    Keywords out;
    if (query == std::string_view::npos) return out;
    std::string_view rest = uri.substr(query + 1);
    while (!rest.empty()) {
        const std::size_t amp = rest.find('&');
        const std::string_view param = rest.substr(0, amp);
        out.insert(percent_decode(param.substr(0, param.find('='))));
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
    }
    return out;
}

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// The keywords of a "key=value key='quoted value'" string, read as libpq's
// conninfo_parse reads it (whitespace around '=', backslash escapes, quotes), so
// a password such as 'x keepalives=0' is not mistaken for a keyword. Stops at
// the first malformed entry: libpq refuses the string anyway.
Keywords key_value_keywords(std::string_view text) {
    Keywords out;
    std::size_t i = 0;
    const auto skip_spaces = [&] {
        while (i < text.size() && is_space(text[i])) ++i;
    };
    while (true) {
        skip_spaces();
        if (i == text.size()) break;
        const std::size_t start = i;
        while (i < text.size() && text[i] != '=' && !is_space(text[i])) ++i;
        std::string keyword(text.substr(start, i - start));
        skip_spaces();
        if (i == text.size() || text[i] != '=') break;
        ++i;
        skip_spaces();
        out.insert(std::move(keyword));
        if (i < text.size() && text[i] == '\'') {
            for (++i; i < text.size() && text[i] != '\''; ++i)
                if (text[i] == '\\' && i + 1 < text.size()) ++i;
            if (i >= text.size()) break;  // unterminated
            ++i;
        } else {
            for (; i < text.size() && !is_space(text[i]); ++i)
                if (text[i] == '\\' && i + 1 < text.size()) ++i;
        }
    }
    return out;
}

// 'value' with backslash and quote escaped: libpq's key=value quoting.
std::string quoted(std::string_view value) {
    std::string out = "'";
    for (const char c : value) {
        if (c == '\\' || c == '\'') out += '\\';
        out += c;
    }
    return out + "'";
}

std::string seconds(std::chrono::milliseconds ms) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(ms).count());
}

// The socket parameters exo adds, in libpq's names and units; 0 adds nothing.
std::vector<std::pair<std::string, std::string>> socket_parameters(const PostgresConfig& c) {
    std::vector<std::pair<std::string, std::string>> out;
    if (c.connect_timeout.count() > 0)
        out.emplace_back("connect_timeout", seconds(c.connect_timeout));
    out.emplace_back("keepalives", "1");
    if (c.keepalives_idle.count() > 0)
        out.emplace_back("keepalives_idle", seconds(c.keepalives_idle));
    if (c.keepalives_interval.count() > 0)
        out.emplace_back("keepalives_interval", seconds(c.keepalives_interval));
    if (c.keepalives_count > 0)
        out.emplace_back("keepalives_count", std::to_string(c.keepalives_count));
    if (c.tcp_user_timeout.count() > 0)
        out.emplace_back("tcp_user_timeout", std::to_string(c.tcp_user_timeout.count()));
    return out;
}

// One statement for the three server settings; empty if all are 0. A setting
// whose source is 'client' came with the startup packet (the uri's own
// options=-c ..., PGOPTIONS, a service file): the user chose it, so it stays.
std::string session_settings_sql(const PostgresConfig& c) {
    const std::pair<const char*, std::chrono::milliseconds> settings[] = {
        {"statement_timeout", c.statement_timeout},
        {"lock_timeout", c.lock_timeout},
        {"idle_in_transaction_session_timeout", c.idle_in_transaction_timeout},
    };
    std::string values;
    for (const auto& [name, value] : settings) {
        if (value.count() <= 0) continue;
        if (!values.empty()) values += ", ";
        values += "('" + std::string(name) + "', '" + std::to_string(value.count()) + "')";
    }
    if (values.empty()) return {};
    return "SELECT set_config(s.name, s.setting, false) FROM (VALUES " + values +
           ") AS s(name, setting) "
           "WHERE s.name NOT IN (SELECT name FROM pg_settings WHERE source = 'client')";
}

}  // namespace

std::string postgres_conninfo(const PostgresConfig& config) {
    const std::string& uri = config.uri;
    if (const std::size_t prefix = uri_prefix_length(uri); prefix > 0) {
        const std::size_t query = query_mark(uri, prefix);
        const Keywords given = uri_keywords(uri, query);
        std::string out = uri;
        bool has_query = query != std::string::npos;
        for (const auto& [key, value] : socket_parameters(config)) {
            if (given.contains(key)) continue;
            // libpq accepts "...?" and "...?a=1&" but not an empty parameter ("&&").
            if (!has_query)
                out += '?';
            else if (out.back() != '?' && out.back() != '&')
                out += '&';
            has_query = true;
            out += key + "=" + percent_encode(value);
        }
        return out;
    }
    // Put in front, not appended: an unquoted value ending in a backslash at the
    // end of the user's string would otherwise escape the separating space.
    const Keywords given = key_value_keywords(uri);
    std::string prefix;
    for (const auto& [key, value] : socket_parameters(config)) {
        if (!given.contains(key)) prefix += key + "=" + quoted(value) + " ";
    }
    return prefix + uri;
}

std::unique_ptr<pqxx::connection> open_postgres_session(const PostgresConfig& config) {
    auto connection = std::make_unique<pqxx::connection>(postgres_conninfo(config));
    // Deprecated in libpqxx 6.4 (7.x never reactivates), but the only way to stop
    // 6.4 from reconnecting on the next statement after a break.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    connection->inhibit_reactivation(true);
#pragma GCC diagnostic pop
    if (const std::string sql = session_settings_sql(config); !sql.empty()) {
        pqxx::nontransaction tx(*connection);
        tx.exec(sql);
    }
    return connection;
}

}  // namespace exo
