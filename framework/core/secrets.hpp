#pragma once
// Secrets in configuration values, and the one rule for keeping them out of
// everything exo prints: `check-config --print`, log lines, the command line's
// error messages and (later) the HTTP /status endpoint. Pure: no I/O.
//
// The rule. A value is secret when it is
//   - redis.password;
//   - a password in postgres.uri (mask_postgres_uri below);
//   - the value of a kafka.properties key, a bindings[].options key or a URI
//     query parameter whose name is_secret_key() (below).
// And wherever a URI is printed, whatever its key, its user-info password is
// masked (mask_uri below), so a credential in a URI that no name marks is not
// shown either.
//
// Where it is applied. check-config --print masks by position: a secret key's
// value, a URI's password. Log lines and error messages are masked by value
// (Redactor): every occurrence of a configured secret of kMinMaskedSecretLength
// bytes or more, and every URI's password. A shorter secret is masked only by
// position: masking every occurrence of a short value masks ordinary words that
// happen to be equal ("Is the ***** running" for the password "server"), which
// tells the reader the secret. check-config warns about such weak secrets
// (config/config_secrets.hpp).
//
// A secret is printed as kSecretMask. ${ENV} expansion happens before any of
// this, so a secret that came from the environment is masked like one written in
// the file.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace exo {

// What a secret is printed as. Loadable again (it is a valid password), so a
// masked configuration still parses.
inline constexpr std::string_view kSecretMask = "*****";

// The shortest secret masked by value in log lines and error messages (Redactor).
// 8: the usual minimum length of a password; below it a secret is likely a word
// that also occurs in ordinary text.
inline constexpr std::size_t kMinMaskedSecretLength = 8;

// True if a key (a kafka.properties or bindings[].options key, a URI query or
// key=value conninfo keyword) holds a secret. Case, '.', '_' and '-' are
// ignored, and the key is secret when it then contains one of: password,
// passwd, pwd, passphrase, secret, token, apikey, privatekey, credential,
// authorization, cookie, jaas, keypem (ssl.key.pem); or is
// sasl.oauthbearer.config. Errs towards secret: sasl.oauthbearer.token.endpoint.url
// is masked though it is only a URL.
bool is_secret_key(std::string_view key) noexcept;

// `uri` (one whole URI, "scheme://...") with its credentials masked; anything
// that is not such a URI is returned as it is. Over-masks on purpose:
//   - the user-info runs to the LAST '@' before the query (a password may hold
//     an unencoded '@', '/' or ':'), and is printed as "user:*****@" (the user
//     is what precedes the first ':'), or as "*****@" when it has no ':' but
//     holds an '@'; a user-info without ':' or '@' is a user name, kept;
//   - every query parameter whose keyword is_secret_key() has its value masked.
std::string mask_uri(std::string_view uri);

// `text` (a log line, an error message) with every URI in it passed through
// mask_uri. A URI starts at a scheme followed by "://" and ends at whitespace, a
// quote, '<', '>' or the end of the text.
std::string mask_uris_in(std::string_view text);

// `conninfo` (a libpq URI or key=value string) with every password masked:
// a URI by mask_uri, a key=value string's secret keywords (password,
// sslpassword) by value, and a key=value string libpq cannot parse (so where
// its password ends is unknown) masked whole.
std::string mask_postgres_uri(std::string_view conninfo);

// The passwords written in `conninfo` (what mask_postgres_uri masks), as written
// and, where libpq decodes them (percent-encoding in a URI, quotes and
// backslashes in key=value), decoded: a message may quote either form.
std::vector<std::string> postgres_uri_passwords(std::string_view conninfo);

// True if a postgres URI's user-info holds an '@' or '/' that is not
// percent-encoded: libpq ends the user-info at the first '@' or '/', so it would
// read part of the password as the host (and quote it in its errors). The
// config refuses such a URI (config/store_sections.cpp).
bool has_unencoded_userinfo(std::string_view conninfo) noexcept;

// Replaces every occurrence of the secrets it was given (those of
// kMinMaskedSecretLength bytes or more; shorter ones are dropped, see the rule
// above) with kSecretMask, then masks every URI's credentials (mask_uris_in):
// the last line of defence for text that may quote a secret (a libpq error
// quoting part of the conninfo, a librdkafka property dump, an exception's
// what()). Longer secrets are replaced first, so a secret containing another is
// masked whole.
// Thread-safety: immutable after construction; any thread may call redact().
class Redactor {
public:
    Redactor() = default;
    explicit Redactor(std::vector<std::string> secrets);

    // True if redact(text) may differ from `text` (a secret, or something that
    // may be a URI, is in it): a cheap test before the copy.
    bool finds_secret(std::string_view text) const noexcept;
    std::string redact(std::string_view text) const;

private:
    std::vector<std::string> secrets_;  // long enough, unique, longest first
};

}  // namespace exo
