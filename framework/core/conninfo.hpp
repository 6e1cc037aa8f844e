#pragma once
// libpq connection strings read the way libpq reads them (fe-connect.c), for the
// two places that must agree with it: pg/session.cpp, which adds parameters the
// user did not set, and core/secrets.cpp, which masks the passwords. Pure.
//
// Two forms: a URI ("postgresql://" or "postgres://", user:password@host, an
// optional ?key=value&... query, percent-encoded) and a key=value string
// (whitespace around '=', values optionally in single quotes, backslash escapes).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace exo::conninfo {

// The length of the URI prefix, 0 for a key=value string. Case-sensitive, as
// libpq's uri_prefix_length.
std::size_t uri_prefix_length(std::string_view text) noexcept;

// Where a URI's user-info ends: the '@' libpq finds before the first '/' (libpq
// reads the user-info up to the first '@' or '/'), or npos when there is none.
std::size_t userinfo_end(std::string_view uri, std::size_t prefix) noexcept;

// Where the query string's '?' is (npos if none): after the user-info, so a raw
// '?' in a password does not start the query.
std::size_t query_mark(std::string_view uri, std::size_t prefix) noexcept;

std::string percent_decode(std::string_view text);
std::string percent_encode(std::string_view text);

// One keyword=value of either form. The value is text[value_begin, value_end)
// as written (quotes and escapes included); `value` is what libpq makes of it.
struct Parameter {
    std::string keyword;
    std::size_t value_begin = 0;
    std::size_t value_end = 0;
    std::string value;
};

// The parameters of a URI's query string ("?a=1&b=2", keywords and values
// percent-decoded, as conninfo_uri_parse_params); none when `query` is npos.
std::vector<Parameter> uri_query_parameters(std::string_view uri, std::size_t query);

// The parameters of a key=value string, as conninfo_parse reads it, so a
// password such as 'x keepalives=0' is not mistaken for a keyword. Stops at the
// first malformed entry: libpq refuses the string anyway.
std::vector<Parameter> key_value_parameters(std::string_view text);

}  // namespace exo::conninfo
