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
        const Redactor r({"abcdefgh", "xabcdefghx", ""});
        CHECK(r.redact("1 abcdefgh 2 xabcdefghx 3 abcdefghabcdefgh") ==
              "1 ***** 2 ***** 3 **********");
        CHECK(r.finds_secret("..abcdefgh.."));
        CHECK_FALSE(r.finds_secret("abcd efgh"));
        CHECK(Redactor().redact("abcdefgh") == "abcdefgh");
        CHECK(Redactor({"********"}).redact("x ******** y") == "x ******** y");
    }

    TEST_CASE(
        "a short secret is not masked by value, so ordinary words equal to it do not reveal it") {
        // A Redis password "server": masking it by value turned libpq's "Is the server
        // running" into "Is the ***** running", which tells the reader the password.
        const Redactor r({"server", "redis-long-secret"});
        const std::string libpq = "connection failed: Is the server running on that host?";
        CHECK(r.redact(libpq) == libpq);
        CHECK(r.redact("AUTH redis-long-secret refused") == "AUTH ***** refused");
        // Structural masking still applies to the short one: in a URI it is a password.
        CHECK(r.redact("redis://:server@cache:6379") == "redis://:*****@cache:6379");
    }

    TEST_CASE(
        "api_key, token, Authorization, private_key, passphrase, sasl.jaas.config and "
        "ssl.key.pem hold secrets, in any case and with any separator") {
        for (const std::string_view key :
             {"api_key", "API-KEY", "apiKey", "x-api-key", "token", "access_token", "Authorization",
              "private_key", "privateKey", "ssl.key.passphrase", "passphrase", "sasl.jaas.config",
              "ssl.key.pem", "client_credentials", "session_cookie", "db_passwd",
              "sasl.oauthbearer.config"}) {
            CAPTURE(key);
            CHECK(is_secret_key(key));
        }
        for (const std::string_view key : {"ssl.key.location", "ssl.ca.pem", "sasl.mechanisms",
                                           "client.id", "key_field", "max.poll.interval.ms"}) {
            CAPTURE(key);
            CHECK_FALSE(is_secret_key(key));
        }
    }

    TEST_CASE(
        "a uri's user-info is masked up to its last '@', so an unencoded '@', '/' or ':' in the "
        "password is not printed") {
        struct Case {
            std::string_view uri;
            std::string_view masked;
        };
        const Case cases[] = {
            {"postgresql://exo:p@ss@db/exo", "postgresql://exo:*****@db/exo"},
            {"postgresql://exo:pa/ss@db/exo", "postgresql://exo:*****@db/exo"},
            {"postgresql://exo:a:b/c@d@db:5432/exo?sslmode=require",
             "postgresql://exo:*****@db:5432/exo?sslmode=require"},
            // No ':' but an '@': which part is the user is unknown, so all of it goes.
            {"postgresql://p@ss@db/exo", "postgresql://*****@db/exo"},
            // The query's '@' is not the user-info's.
            {"postgresql://exo@db/exo?password=p@ss&sslmode=disable",
             "postgresql://exo@db/exo?password=*****&sslmode=disable"},
            {"postgresql://exo@db/exo?sslpassword=k3y",
             "postgresql://exo@db/exo?sslpassword=*****"},
        };
        for (const Case& c : cases) {
            CAPTURE(c.uri);
            CHECK(mask_postgres_uri(c.uri) == c.masked);
        }
        CHECK(mask_uri("https://user:pa@ss@api.example/v1?token=t0k&x=1") ==
              "https://user:*****@api.example/v1?token=*****&x=1");
        CHECK(mask_uri("not a uri: user:pw@host") == "not a uri: user:pw@host");
    }

    TEST_CASE("a key=value conninfo libpq cannot parse is masked whole") {
        CHECK(mask_postgres_uri("host=db oops password=s3cret dbname=exo") == "*****");
        CHECK(mask_postgres_uri("postgresql:/exo:s3cret@db") == "*****");
        CHECK(mask_postgres_uri("host=db password=s3cret") == "host=db password=*****");
    }

    TEST_CASE("every uri in a message has its credentials masked, whatever its scheme") {
        CHECK(mask_uris_in("cannot reach redis://:hunter2@cache:6379/0, nor "
                           "\"postgresql://exo:pw@db/exo\"; see https://docs.example/x") ==
              "cannot reach redis://:*****@cache:6379/0, nor \"postgresql://exo:*****@db/exo\"; "
              "see https://docs.example/x");
        CHECK(mask_uris_in("two: a://u:1@h b://u:2@h") == "two: a://u:*****@h b://u:*****@h");
        CHECK(mask_uris_in("no scheme ://x:y@z") == "no scheme ://x:y@z");
        CHECK(mask_uris_in("") == "");
    }

    TEST_CASE("a postgres uri whose user-info holds an unencoded '@' or '/' is recognised") {
        CHECK(has_unencoded_userinfo("postgresql://exo:p@ss@db/exo"));
        CHECK(has_unencoded_userinfo("postgresql://exo:pa/ss@db/exo"));
        CHECK(has_unencoded_userinfo("postgres://me@corp:pw@db/exo"));
        CHECK_FALSE(has_unencoded_userinfo("postgresql://exo:p%40ss%2F@db/exo"));
        CHECK_FALSE(has_unencoded_userinfo("postgresql://exo:pa?ss@db/exo?x=1"));
        CHECK_FALSE(has_unencoded_userinfo("postgresql://exo@db/exo?application_name=a@b"));
        CHECK_FALSE(has_unencoded_userinfo("postgresql://db/exo"));
        CHECK_FALSE(has_unencoded_userinfo("host=db password=p@ss/x"));
    }

    TEST_CASE(
        "the config refuses a postgres uri with an unencoded '@' or '/' in its password, "
        "without quoting it") {
        const std::string errors = errors_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
postgres:
  uri: "postgresql://exo:Secret@Pass/Phrase9@localhost/exo"
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
)");
        CHECK(errors.find("postgres.uri") != std::string::npos);
        CHECK(errors.find("%40") != std::string::npos);
        CHECK(errors.find("Secret") == std::string::npos);
        CHECK(errors.find("Phrase9") == std::string::npos);
    }

    TEST_CASE("check-config's warnings name every secret too short to be masked by value") {
        const Config c = parse(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: g
  properties: { sasl.password: "long-enough-1", sasl.jaas.config: "x" }
redis:
  password: server
postgres:
  uri: "postgresql://exo:pw%21@localhost/exo"
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
    options: { api_key: k1, token: "a-long-token-value" }
)");
        const auto warnings = weak_secret_warnings(c);
        std::string all;
        for (const auto& w : warnings) all += w + "\n";
        CAPTURE(all);
        CHECK(warnings.size() == 4);
        for (const char* path : {"kafka.properties.sasl.jaas.config", "redis.password",
                                 "postgres.uri's password", "bindings[0].options.api_key"})
            CHECK(all.find(path) != std::string::npos);
        // A masked value (a config check-config --print wrote) is no weak secret.
        Config printed = c;
        printed.redis.password = std::string(kSecretMask);
        CHECK(weak_secret_warnings(printed).size() == 3);
        // A warning names the secret, never its value.
        CHECK(all.find("server") == std::string::npos);
        CHECK(all.find("pw!") == std::string::npos);
        CHECK(all.find("k1") == std::string::npos);
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
