// logging.format and observability.listen in exo.yaml: config/process_sections.cpp and
// config/observability_section.cpp. No servers.
#include <doctest/doctest.h>

#include <string>

#include "config/config_parser.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

namespace {

// kMinimal (9 lines) with a last section written by the test (line 10 on).
std::string with_tail(std::string_view tail) {
    return std::string(body(kMinimal)) + std::string(tail);
}

}  // namespace

TEST_SUITE("config: logging.format and observability") {
    TEST_CASE("without the keys logs are text and the HTTP endpoint is off") {
        const Config c = parse(with_tail(""));
        CHECK(c.logging.format == LogFormat::text);
        CHECK_FALSE(c.observability.enabled());
        CHECK_FALSE(c.observability.listen.has_value());
    }

    TEST_CASE("logging.format json and text are read") {
        CHECK(parse(with_tail("logging:\n  format: json\n")).logging.format == LogFormat::json);
        CHECK(parse(with_tail("logging:\n  format: text\n")).logging.format == LogFormat::text);
    }

    TEST_CASE("an unknown logging.format names the path, the line, the choices and the closest") {
        const std::string text = errors_of(with_tail("logging:\n  level: info\n  format: jsno\n"));
        CHECK_MESSAGE(text.find("exo.yaml:12: logging.format: unknown value 'jsno'; expected one "
                                "of: text, json (did you mean 'json'?)") != std::string::npos,
                      text);
    }

    TEST_CASE("observability.listen gives host and port and turns the endpoint on") {
        const Config c = parse(with_tail("observability:\n  listen: \"127.0.0.1:9090\"\n"));
        REQUIRE(c.observability.enabled());
        CHECK(c.observability.listen->host == "127.0.0.1");
        CHECK(c.observability.listen->port == 9090);
    }

    TEST_CASE("a host name, every interface and a bracketed IPv6 address are accepted") {
        const auto listen = [](std::string_view value) {
            return parse(with_tail("observability:\n  listen: \"" + std::string(value) + "\"\n"))
                .observability.listen.value();
        };
        CHECK(listen("localhost:1").host == "localhost");
        CHECK(listen("localhost:1").port == 1);
        CHECK(listen("0.0.0.0:65535").port == 65535);
        CHECK(listen("[::1]:8080").host == "::1");
        CHECK(listen("[::1]:8080").port == 8080);
    }

    TEST_CASE("observability.listen may come from the environment") {
        const Config c = parse(with_tail("observability:\n  listen: \"${LISTEN}\"\n"),
                               env_of({{"LISTEN", "127.0.0.1:9191"}}));
        CHECK(c.observability.listen->port == 9191);
    }

    TEST_CASE("a bad observability.listen names the path, the line and what to write instead") {
        struct Case {
            std::string value;
            std::string says;
        };
        const Case cases[] = {
            {"9090", "'9090': has no host: write \"127.0.0.1:9090\""},
            {"localhost", "'localhost': has no port: write HOST:PORT"},
            {":9090", "':9090': has no host: write \"127.0.0.1:9090\""},
            {"127.0.0.1:0", "the port must be a whole number between 1 and 65535, got '0'"},
            {"127.0.0.1:65536", "between 1 and 65535, got '65536'"},
            {"127.0.0.1:http", "between 1 and 65535, got 'http'"},
            {"127.0.0.1:", "between 1 and 65535, got ''"},
            {"::1:9090", "an IPv6 address goes in brackets: write \"[::1]:9090\""},
            {"[::1]9090", "has no port: write \"[::1]:9090\""},
            {"[::1:9090", "needs its ']'"},
            {"my host:80", "host 'my host' is not a host name or IP address"},
            {"*:80", "host '*' is not a host name or IP address (write 0.0.0.0"},
        };
        for (const Case& c : cases) {
            CAPTURE(c.value);
            const std::string text =
                errors_of(with_tail("observability:\n  listen: \"" + c.value + "\"\n"));
            CHECK_MESSAGE(text.find("exo.yaml:11: observability.listen: ") != std::string::npos,
                          text);
            CHECK_MESSAGE(text.find(c.says) != std::string::npos, text);
        }
    }

    TEST_CASE("observability.listen as a mapping, and an unknown observability key, are refused") {
        const std::string text =
            errors_of(with_tail("observability:\n  listen: { port: 9090 }\n  lisen: x\n"));
        CHECK_MESSAGE(text.find("exo.yaml:11: observability.listen: ") != std::string::npos, text);
        CHECK_MESSAGE(text.find("exo.yaml:12: observability.lisen: ") != std::string::npos, text);
        CHECK_MESSAGE(text.find("did you mean 'listen'") != std::string::npos, text);
    }
}
