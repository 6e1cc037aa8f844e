#include "pg/session.hpp"

#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "core/conninfo.hpp"

namespace exo {
namespace {

using Keywords = std::set<std::string, std::less<>>;

Keywords keywords_of(const std::vector<conninfo::Parameter>& parameters) {
    Keywords out;
    for (const auto& p : parameters) out.insert(p.keyword);
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
    if (const std::size_t prefix = conninfo::uri_prefix_length(uri); prefix > 0) {
        const std::size_t query = conninfo::query_mark(uri, prefix);
        const Keywords given = keywords_of(conninfo::uri_query_parameters(uri, query));
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
            out += key + "=" + conninfo::percent_encode(value);
        }
        return out;
    }
    // Put in front, not appended: an unquoted value ending in a backslash at the
    // end of the user's string would otherwise escape the separating space.
    const Keywords given = keywords_of(conninfo::key_value_parameters(uri));
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
