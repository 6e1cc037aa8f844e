// The secrets rule and its masking: core/secrets.hpp, config/config_secrets.hpp. No servers.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/config_secrets.hpp"
#include "core/secrets.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

TEST_SUITE("secrets") {
    TEST_CASE("a property or option key holds a secret when it names a password or secret") {
        struct Case {
            std::string_view key;
            bool secret;
        };
        const Case cases[] = {
            {"sasl.password", true},
            {"ssl.key.password", true},
            {"ssl.keystore.password", true},
            {"sasl.oauthbearer.client.secret", true},
            {"SASL.PASSWORD", true},
            {"api_secret", true},
            {"db_password_file_contents", true},
            {"ssl.key.pem", true},
            {"sasl.oauthbearer.config", true},
            {"sasl.jaas.config", true},
            {"sasl.username", false},
            {"sasl.mechanism", false},
            {"security.protocol", false},
            {"ssl.certificate.pem", false},
            {"session.timeout.ms", false},
            {"currency", false},
        };
        for (const Case& c : cases) {
            CAPTURE(c.key);
            CHECK(is_secret_key(c.key) == c.secret);
        }
    }

    TEST_CASE("the password in a postgres uri is masked in both forms and nothing else changes") {
        struct Case {
            std::string_view uri;
            std::string_view masked;
        };
        const Case cases[] = {
            {"postgresql://exo:s3cret@db:5432/exo", "postgresql://exo:*****@db:5432/exo"},
            {"postgres://exo:s3cret@db/exo?sslmode=require",
             "postgres://exo:*****@db/exo?sslmode=require"},
            {"postgresql://exo:p%40ss%3Fw@db/exo", "postgresql://exo:*****@db/exo"},
            {"postgresql://exo:pa?ss@db/exo?x=1", "postgresql://exo:*****@db/exo?x=1"},
            {"postgresql://exo@db/exo?password=s3cret&sslmode=disable",
             "postgresql://exo@db/exo?password=*****&sslmode=disable"},
            {"postgresql://exo:a@db/exo?password=b",
             "postgresql://exo:*****@db/exo?password=*****"},
            {"postgresql://exo@db/exo", "postgresql://exo@db/exo"},
            {"postgresql://db/exo", "postgresql://db/exo"},
            {"postgresql://exo:@db/exo", "postgresql://exo:*****@db/exo"},
            {"host=db user=exo password=s3cret dbname=exo",
             "host=db user=exo password=***** dbname=exo"},
            {"host=db password = 'with space' dbname=exo", "host=db password = ***** dbname=exo"},
            {"host=db password='it\\'s' dbname=exo", "host=db password=***** dbname=exo"},
            {"password=s3cret", "password=*****"},
            {"host=db dbname=exo", "host=db dbname=exo"},
            {"host=db dbname='password=x'", "host=db dbname='password=x'"},
        };
        for (const Case& c : cases) {
            CAPTURE(c.uri);
            CHECK(mask_postgres_uri(c.uri) == c.masked);
        }
    }

    TEST_CASE("the passwords of a postgres uri are found as written and as libpq decodes them") {
        const auto found = [](std::string_view uri) {
            auto out = postgres_uri_passwords(uri);
            std::sort(out.begin(), out.end());
            return out;
        };
        CHECK(found("postgresql://exo:p%40ss@db/exo") ==
              std::vector<std::string>{"p%40ss", "p@ss"});
        CHECK(found("host=db password='it\\'s'") == std::vector<std::string>{"'it\\'s'", "it's"});
        CHECK(found("postgresql://exo@db/exo").empty());
    }

    TEST_CASE("a redactor masks every occurrence of every secret, the longest first") {
        const Redactor r({"abc", "xabcx", ""});
        CHECK(r.redact("1 abc 2 xabcx 3 abcabc") == "1 ***** 2 ***** 3 **********");
        CHECK(r.finds_secret("..abc.."));
        CHECK_FALSE(r.finds_secret("ab c"));
        CHECK(Redactor().redact("abc") == "abc");
        CHECK(Redactor({"*****"}).redact("x ***** y") == "x ***** y");
    }

    TEST_CASE("the secrets of a config include those that came from the environment") {
        const Config c = parse(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
  properties:
    sasl.username: alice
    sasl.password: "${SASL_PW}"
redis:
  password: "${REDIS_PW}"
postgres:
  uri: "postgresql://exo:${PG_PW}@localhost/exo"
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
    options: { api_secret: "opt-secret", currency: EUR }
)",
                               env_of({{"SASL_PW", "sasl-from-env"},
                                       {"REDIS_PW", "redis-from-env"},
                                       {"PG_PW", "pg-from-env"}}));
        const Redactor r = config_redactor(c);
        const std::string masked =
            r.redact("sasl-from-env redis-from-env pg-from-env opt-secret alice EUR");
        CHECK(masked == "***** ***** ***** ***** alice EUR");
    }
}
