#include "core/secrets.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/conninfo.hpp"

namespace exo {
namespace {

// A secret in a text: where it is written, and what libpq makes of it.
struct Span {
    std::size_t begin;
    std::size_t end;
    std::string value;
};

bool is_scheme_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
}

// The length of "scheme://" at the start of `text`, 0 if it does not start so.
std::size_t scheme_length(std::string_view text) {
    if (text.empty() || std::isalpha(static_cast<unsigned char>(text[0])) == 0) return 0;
    std::size_t i = 1;
    while (i < text.size() && is_scheme_char(text[i])) ++i;
    return text.substr(i).starts_with("://") ? i + 3 : 0;
}

bool is_host_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_' ||
           c == ':' || c == '[' || c == ']' || c == ',' || c == '%';
}

// True if `rest` reads as what follows a URI's user-info: hosts, then an
// optional path without '@', then an optional query of key=value pairs.
bool reads_as_hosts_and_after(std::string_view rest) {
    std::size_t i = 0;
    while (i < rest.size() && is_host_char(rest[i])) ++i;
    if (i < rest.size() && rest[i] == '/')
        for (++i; i < rest.size() && rest[i] != '?'; ++i)
            if (rest[i] == '@') return false;
    if (i == rest.size()) return true;
    if (rest[i] != '?') return false;
    std::string_view query = rest.substr(i + 1);
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        if (!pair.empty() && pair.find('=') == std::string_view::npos) return false;
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
    return true;
}

// The '@' that ends the user-info, or npos when there is none. Where libpq
// finds one (an '@' before any '/'), at it or at a later '@' when what follows
// libpq's does not read as hosts, path and query (the password held an
// unencoded '@'); where libpq finds none, at the first '@' after which the rest
// reads so, unless the whole authority already does (an '@' in the query). A
// URI that reads no way is masked up to its last '@': over-masked, never shown.
std::size_t userinfo_end(std::string_view uri, std::size_t authority) {
    const std::size_t first = uri.find('@', authority);
    if (first == std::string_view::npos) return std::string_view::npos;
    const std::size_t libpq = conninfo::userinfo_end(uri, authority);
    if (libpq == std::string_view::npos && reads_as_hosts_and_after(uri.substr(authority)))
        return std::string_view::npos;
    for (std::size_t at = first; at != std::string_view::npos; at = uri.find('@', at + 1))
        if (reads_as_hosts_and_after(uri.substr(at + 1))) return at;
    return uri.rfind('@');
}

// The '?' that starts the query: the first after the user-info.
std::size_t query_start(std::string_view uri, std::size_t authority) {
    const std::size_t at = userinfo_end(uri, authority);
    return uri.find('?', at == std::string_view::npos ? authority : at + 1);
}

// The secrets of one URI (mask_uri's rule), in the order they are written.
std::vector<Span> uri_secrets(std::string_view uri) {
    std::vector<Span> out;
    const std::size_t authority = scheme_length(uri);
    if (authority == 0) return out;
    if (const std::size_t at = userinfo_end(uri, authority); at != std::string_view::npos) {
        const std::string_view userinfo = uri.substr(authority, at - authority);
        const std::size_t colon = userinfo.find(':');
        if (colon != std::string_view::npos) {
            out.push_back(
                {authority + colon + 1, at, conninfo::percent_decode(userinfo.substr(colon + 1))});
        } else if (userinfo.find('@') != std::string_view::npos) {
            out.push_back({authority, at, conninfo::percent_decode(userinfo)});
        }
    }
    for (const auto& p : conninfo::uri_query_parameters(uri, query_start(uri, authority)))
        if (is_secret_key(p.keyword)) out.push_back({p.value_begin, p.value_end, p.value});
    return out;
}

// The secrets of a key=value conninfo; the whole text when libpq's parser stops
// before its end (then where a password ends is unknown).
std::vector<Span> key_value_secrets(std::string_view text) {
    const auto parameters = conninfo::key_value_parameters(text);
    const std::size_t parsed = parameters.empty() ? 0 : parameters.back().value_end;
    if (text.find_first_not_of(" \t\n\r\f\v", parsed) != std::string_view::npos)
        return {{0, text.size(), std::string(text)}};
    std::vector<Span> out;
    for (const auto& p : parameters)
        if (is_secret_key(p.keyword)) out.push_back({p.value_begin, p.value_end, p.value});
    return out;
}

std::vector<Span> postgres_secrets(std::string_view conninfo) {
    return conninfo::uri_prefix_length(conninfo) > 0 ? uri_secrets(conninfo)
                                                     : key_value_secrets(conninfo);
}

std::string masked(std::string_view text, std::vector<Span> spans) {
    std::string out(text);
    // From the end, so the earlier positions stay valid.
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin > b.begin; });
    for (const Span& s : spans) out.replace(s.begin, s.end - s.begin, kSecretMask);
    return out;
}

bool ends_uri(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '"' || c == '\'' || c == '<' ||
           c == '>' || c == '`';
}

}  // namespace

bool is_secret_key(std::string_view key) noexcept {
    static constexpr std::array<std::string_view, 13> kSecretWords = {
        "password",   "passwd",     "pwd",           "passphrase", "secret", "token", "apikey",
        "privatekey", "credential", "authorization", "cookie",     "jaas",   "keypem"};
    try {
        std::string k;
        for (const char c : key)
            if (c != '.' && c != '_' && c != '-')
                k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (k == "sasloauthbearerconfig") return true;
        return std::any_of(kSecretWords.begin(), kSecretWords.end(), [&](std::string_view word) {
            return k.find(word) != std::string::npos;
        });
    } catch (...) {
        return true;  // out of memory: treating the value as secret is the safe answer
    }
}

std::string mask_uri(std::string_view uri) {
    return masked(uri, uri_secrets(uri));
}

std::string mask_uris_in(std::string_view text) {
    std::string out;
    std::size_t copied = 0;
    for (std::size_t mark = text.find("://"); mark != std::string_view::npos;
         mark = text.find("://", mark + 3)) {
        std::size_t begin = mark;
        while (begin > copied && is_scheme_char(text[begin - 1])) --begin;
        while (begin < mark && std::isalpha(static_cast<unsigned char>(text[begin])) == 0) ++begin;
        if (begin == mark) continue;  // no scheme: not a URI
        std::size_t end = mark + 3;
        while (end < text.size() && !ends_uri(text[end])) ++end;
        out.append(text.substr(copied, begin - copied));
        out += mask_uri(text.substr(begin, end - begin));
        copied = end;
        mark = end > mark + 3 ? end - 3 : mark;
    }
    out.append(text.substr(copied));
    return out;
}

std::string mask_postgres_uri(std::string_view conninfo) {
    return masked(conninfo, postgres_secrets(conninfo));
}

std::vector<std::string> postgres_uri_passwords(std::string_view conninfo) {
    std::vector<std::string> out;
    for (Span& s : postgres_secrets(conninfo)) {
        out.emplace_back(conninfo.substr(s.begin, s.end - s.begin));
        out.push_back(std::move(s.value));
    }
    return out;
}

bool has_unencoded_userinfo(std::string_view conninfo) noexcept {
    const std::size_t prefix = conninfo::uri_prefix_length(conninfo);
    if (prefix == 0) return false;
    const std::size_t ours = userinfo_end(conninfo, prefix);
    if (ours == std::string_view::npos || ours == conninfo::userinfo_end(conninfo, prefix))
        return false;
    // A user-info with neither ':' nor '@' is a user name with a '/' (or a path
    // with an '@'): no password for libpq to misread.
    return conninfo.substr(prefix, ours - prefix).find_first_of(":@") != std::string_view::npos;
}

Redactor::Redactor(std::vector<std::string> secrets) : secrets_(std::move(secrets)) {
    // A value made of '*' only is skipped too: the mask would find itself again.
    std::erase_if(secrets_, [](const std::string& s) {
        return s.size() < kMinMaskedSecretLength || s.find_first_not_of('*') == std::string::npos;
    });
    std::sort(secrets_.begin(), secrets_.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
    secrets_.erase(std::unique(secrets_.begin(), secrets_.end()), secrets_.end());
}

bool Redactor::finds_secret(std::string_view text) const noexcept {
    return text.find("://") != std::string_view::npos ||
           std::any_of(secrets_.begin(), secrets_.end(), [&](const std::string& secret) {
               return text.find(secret) != std::string_view::npos;
           });
}

std::string Redactor::redact(std::string_view text) const {
    std::string out(text);
    // Longest first: a secret that contains a shorter one is masked whole.
    for (const std::string& secret : secrets_) {
        for (std::size_t at = out.find(secret); at != std::string::npos;
             at = out.find(secret, at + kSecretMask.size()))
            out.replace(at, secret.size(), kSecretMask);
    }
    return mask_uris_in(out);
}

}  // namespace exo
