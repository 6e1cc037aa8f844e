#include "core/secrets.hpp"

#include <algorithm>
#include <cctype>

#include "core/conninfo.hpp"

namespace exo {
namespace {

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// A password in a conninfo: where it is written, and what libpq makes of it.
struct Password {
    std::size_t begin;
    std::size_t end;
    std::string value;
};

std::vector<Password> passwords_in(std::string_view text) {
    std::vector<Password> out;
    const auto add_keywords = [&](const std::vector<conninfo::Parameter>& parameters) {
        for (const auto& p : parameters)
            if (p.keyword == "password") out.push_back({p.value_begin, p.value_end, p.value});
    };
    const std::size_t prefix = conninfo::uri_prefix_length(text);
    if (prefix == 0) {
        add_keywords(conninfo::key_value_parameters(text));
        return out;
    }
    if (const std::size_t at = conninfo::userinfo_end(text, prefix); at != std::string::npos) {
        // user:password@ (the password is everything after the first ':').
        const std::size_t colon = text.find(':', prefix);
        if (colon != std::string::npos && colon < at) {
            out.push_back(
                {colon + 1, at, conninfo::percent_decode(text.substr(colon + 1, at - colon - 1))});
        }
    }
    add_keywords(conninfo::uri_query_parameters(text, conninfo::query_mark(text, prefix)));
    return out;
}

}  // namespace

bool is_secret_key(std::string_view key) noexcept {
    try {
        const std::string k = lowercase(key);
        if (k.find("password") != std::string::npos || k.find("secret") != std::string::npos)
            return true;
        return k == "ssl.key.pem" || k == "sasl.oauthbearer.config" || k == "sasl.jaas.config";
    } catch (...) {
        return true;  // out of memory: treating the value as secret is the safe answer
    }
}

std::string mask_postgres_uri(std::string_view conninfo) {
    std::string out(conninfo);
    std::vector<Password> found = passwords_in(conninfo);
    // From the end, so the earlier positions stay valid.
    std::sort(found.begin(), found.end(),
              [](const Password& a, const Password& b) { return a.begin > b.begin; });
    for (const Password& p : found) out.replace(p.begin, p.end - p.begin, kSecretMask);
    return out;
}

std::vector<std::string> postgres_uri_passwords(std::string_view conninfo) {
    std::vector<std::string> out;
    for (const Password& p : passwords_in(conninfo)) {
        out.emplace_back(conninfo.substr(p.begin, p.end - p.begin));
        out.push_back(p.value);
    }
    return out;
}

Redactor::Redactor(std::vector<std::string> secrets) : secrets_(std::move(secrets)) {
    std::erase_if(secrets_, [](const std::string& s) { return s.empty(); });
    std::sort(secrets_.begin(), secrets_.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
    secrets_.erase(std::unique(secrets_.begin(), secrets_.end()), secrets_.end());
}

bool Redactor::finds_secret(std::string_view text) const noexcept {
    return std::any_of(secrets_.begin(), secrets_.end(), [&](const std::string& secret) {
        return text.find(secret) != std::string_view::npos;
    });
}

std::string Redactor::redact(std::string_view text) const {
    std::string out(text);
    // Longest first: a secret that contains a shorter one is masked whole. The
    // mask itself contains no secret unless a secret is made of '*' only, which
    // is skipped so the replacement cannot loop.
    for (const std::string& secret : secrets_) {
        if (secret.find_first_not_of('*') == std::string::npos) continue;
        for (std::size_t at = out.find(secret); at != std::string::npos;
             at = out.find(secret, at + kSecretMask.size()))
            out.replace(at, secret.size(), kSecretMask);
    }
    return out;
}

}  // namespace exo
