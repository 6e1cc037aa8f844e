#pragma once
// Secrets in configuration values, and the one rule for keeping them out of
// everything exo prints: `check-config --print`, log lines, error messages and
// (later) the HTTP /status endpoint. Pure: no I/O.
//
// The rule. A value is secret when it is
//   - redis.password;
//   - the password in postgres.uri: the user-info password of a URI
//     (postgresql://user:PASSWORD@host/db) and any `password` keyword, in a URI
//     query (?password=...) or a key=value string (password=... or '...');
//   - the value of a kafka.properties key or a bindings[].options key whose name
//     contains "password" or "secret" in any case (sasl.password,
//     ssl.key.password, ssl.keystore.password, sasl.oauthbearer.client.secret, a
//     handler's api_secret), or that is one of the keys holding a private key or
//     credentials in another form (ssl.key.pem, sasl.oauthbearer.config,
//     sasl.jaas.config).
// A secret is printed as kMask. ${ENV} expansion happens before any of this, so
// a secret that came from the environment is masked like one written in the file.
#include <string>
#include <string_view>
#include <vector>

namespace exo {

// What a secret is printed as. Loadable again (it is a valid password), so a
// masked configuration still parses.
inline constexpr std::string_view kSecretMask = "*****";

// True if a kafka.properties or bindings[].options key holds a secret (the rule
// above).
bool is_secret_key(std::string_view key) noexcept;

// `conninfo` (a libpq URI or key=value string) with every password replaced by
// kSecretMask; everything else is kept as written. Read as libpq reads it
// (core/conninfo.hpp): a URI's password runs from the first ':' of the user-info
// to the '@' before the host.
std::string mask_postgres_uri(std::string_view conninfo);

// The passwords written in `conninfo`, as written and, where libpq decodes them
// (percent-encoding in a URI, quotes and backslashes in key=value), decoded: a
// message may quote either form.
std::vector<std::string> postgres_uri_passwords(std::string_view conninfo);

// Replaces every occurrence of the secrets it was given with kSecretMask: the
// last line of defence for text that may quote a secret (a libpq error quoting
// part of the conninfo, a librdkafka property dump, an exception's what()).
// Longer secrets are replaced first, so a secret containing another is masked
// whole. Empty secrets are ignored.
// Thread-safety: immutable after construction; any thread may call redact().
class Redactor {
public:
    Redactor() = default;
    explicit Redactor(std::vector<std::string> secrets);

    bool empty() const noexcept { return secrets_.empty(); }
    // True if `text` holds a secret (then redact() changes it).
    bool finds_secret(std::string_view text) const noexcept;
    std::string redact(std::string_view text) const;

private:
    std::vector<std::string> secrets_;  // non-empty, unique, longest first
};

}  // namespace exo
