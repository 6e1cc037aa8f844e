// The conninfo exo connects with: pg/session.hpp. No servers.
#include <doctest/doctest.h>

#include <string>

#include "config/config.hpp"
#include "pg/session.hpp"

using namespace exo;
using namespace std::chrono_literals;

namespace {

std::string conninfo_of(std::string uri, PostgresConfig config = {}) {
    config.uri = std::move(uri);
    return postgres_conninfo(config);
}

// What the defaults of config.hpp add, in libpq's units (seconds, and ms for
// tcp_user_timeout).
constexpr std::string_view kDefaultQuery =
    "connect_timeout=5&keepalives=1&keepalives_idle=30&keepalives_interval=10&"
    "keepalives_count=3&tcp_user_timeout=60000";
constexpr std::string_view kDefaultPairs =
    "connect_timeout='5' keepalives='1' keepalives_idle='30' keepalives_interval='10' "
    "keepalives_count='3' tcp_user_timeout='60000' ";

}  // namespace

TEST_SUITE("pg session") {
    TEST_CASE("a URI without a query gets the socket parameters as its query string") {
        CHECK(conninfo_of("postgresql://exo@localhost:5432/exo") ==
              "postgresql://exo@localhost:5432/exo?" + std::string(kDefaultQuery));
        CHECK(conninfo_of("postgres://localhost") ==
              "postgres://localhost?" + std::string(kDefaultQuery));
    }

    TEST_CASE("a URI with a query keeps it and gets the socket parameters after it") {
        CHECK(conninfo_of("postgresql://h/db?sslmode=require&application_name=exo") ==
              "postgresql://h/db?sslmode=require&application_name=exo&" +
                  std::string(kDefaultQuery));
        // An empty query and a trailing '&' are legal for libpq; "&&" is not.
        CHECK(conninfo_of("postgresql://h/db?") ==
              "postgresql://h/db?" + std::string(kDefaultQuery));
        CHECK(conninfo_of("postgresql://h/db?sslmode=disable&") ==
              "postgresql://h/db?sslmode=disable&" + std::string(kDefaultQuery));
    }

    TEST_CASE("a key=value string gets the socket parameters quoted, in front of it") {
        CHECK(conninfo_of("host=localhost dbname=exo") ==
              std::string(kDefaultPairs) + "host=localhost dbname=exo");
        // In front, so a trailing backslash of the user's string cannot escape a
        // separator of exo's.
        CHECK(conninfo_of("host=h password=x\\") ==
              std::string(kDefaultPairs) + "host=h password=x\\");
    }

    TEST_CASE("a socket parameter the uri sets itself is never overridden") {
        const std::string uri =
            "postgresql://h/db?keepalives_idle=7&tcp_user_timeout=0&keepalives%5Fcount=9";
        CHECK(conninfo_of(uri) == uri + "&connect_timeout=5&keepalives=1&keepalives_interval=10");

        const std::string pairs = "host=h keepalives = 0\tconnect_timeout='10' dbname=exo";
        CHECK(conninfo_of(pairs) ==
              "keepalives_idle='30' keepalives_interval='10' keepalives_count='3' "
              "tcp_user_timeout='60000' " +
                  pairs);
    }

    TEST_CASE("0 leaves a socket parameter to libpq's default, the operating system's") {
        PostgresConfig config;
        config.keepalives_idle = 0ms;
        config.keepalives_interval = 0ms;
        config.keepalives_count = 0;
        config.tcp_user_timeout = 0ms;
        CHECK(conninfo_of("postgresql://h/db", config) ==
              "postgresql://h/db?connect_timeout=5&keepalives=1");
        CHECK(conninfo_of("host=h", config) == "connect_timeout='5' keepalives='1' host=h");
    }

    TEST_CASE("configured durations are converted to libpq's units") {
        PostgresConfig config;
        config.connect_timeout = 12000ms;
        config.keepalives_idle = 45000ms;
        config.keepalives_interval = 2000ms;
        config.keepalives_count = 7;
        config.tcp_user_timeout = 1500ms;
        CHECK(conninfo_of("postgresql://h", config) ==
              "postgresql://h?connect_timeout=12&keepalives=1&keepalives_idle=45&"
              "keepalives_interval=2&keepalives_count=7&tcp_user_timeout=1500");
    }

    TEST_CASE("special characters in the uri are kept byte for byte and never read as keywords") {
        // A raw '?' inside the password: libpq reads user:password up to the '@',
        // so the URI has no query yet.
        CHECK(conninfo_of("postgresql://u:pa?ss%40w%20rd@h:5432/db") ==
              "postgresql://u:pa?ss%40w%20rd@h:5432/db?" + std::string(kDefaultQuery));
        // A password that merely contains "keepalives_idle=1", quoted or escaped.
        const std::string quoted = "password='a keepalives_idle=1 \\' b' host=h";
        CHECK(conninfo_of(quoted) == std::string(kDefaultPairs) + quoted);
        const std::string escaped = "password=a\\ keepalives=0 host=h";
        CHECK(conninfo_of(escaped) == std::string(kDefaultPairs) + escaped);
        // Percent-encoded values in a query are not decoded into keywords.
        const std::string encoded = "postgresql://h/db?options=-c%20keepalives%3D0";
        CHECK(conninfo_of(encoded) == encoded + "&" + std::string(kDefaultQuery));
    }
}
