// SecuritySettings (kafka/kafka_error.hpp): which client errors librdkafka reports are
// failures of the security settings that no retry gets past, and what their message says.
// The reasons are librdkafka 2.0.2's own, as a real broker (scripts/kafka.sh --security)
// made it say them. No server.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "kafka/kafka_error.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace {

const std::map<std::string, std::string> kScramOverTls = {
    {"security.protocol", "SASL_SSL"},
    {"sasl.mechanisms", "SCRAM-SHA-512"},
    {"sasl.username", "exo"},
    {"sasl.password", "s3cret-Pa55"},
    {"ssl.ca.location", "/etc/exo/ca.pem"},
    {"session.timeout.ms", "6000"},
};

constexpr const char* kWrongPassword =
    "sasl_ssl://127.0.0.1:32395/bootstrap: SASL authentication error: Authentication failed "
    "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after "
    "317ms in state AUTH_REQ)";
constexpr const char* kWrongMechanism =
    "sasl_ssl://127.0.0.1:32395/bootstrap: SASL SCRAM-SHA-256 mechanism handshake failed: "
    "Broker: Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512 (after "
    "302ms in state AUTH_HANDSHAKE)";
constexpr const char* kWrongCa =
    "sasl_ssl://127.0.0.1:32395/bootstrap: SSL handshake failed: error:0A000086:SSL "
    "routines::certificate verify failed: broker certificate could not be verified, verify that "
    "ssl.ca.location is correctly configured or root CA certificates are installed (install "
    "ca-certificates package) (after 10ms in state SSL_HANDSHAKE)";

std::string message_of(const exo::SecuritySettings& settings, rd_kafka_resp_err_t code,
                       const std::string& reason) {
    auto failure = settings.failure(code, reason, "the consumer of group 'g'");
    REQUIRE(failure.has_value());
    CHECK_FALSE(failure->retriable());
    CHECK(failure->code() == code);
    return failure->what();
}

}  // namespace

TEST_SUITE("kafka security settings") {
    TEST_CASE(
        "a refused SASL login is a failure no retry gets past, naming the user, the mechanism "
        "and what to check, never the password") {
        const exo::SecuritySettings settings(kScramOverTls);
        for (const char* reason : {kWrongPassword, kWrongMechanism}) {
            const auto message = message_of(settings, RD_KAFKA_RESP_ERR__AUTHENTICATION, reason);
            CHECK(message.find(reason) != std::string::npos);
            CHECK(message.find("sasl.username=exo") != std::string::npos);
            CHECK(message.find("sasl.mechanisms=SCRAM-SHA-512") != std::string::npos);
            CHECK(message.find("security.protocol=SASL_SSL") != std::string::npos);
            CHECK(message.find("check sasl.username and sasl.password") != std::string::npos);
            CHECK(message.find("the consumer of group 'g'") != std::string::npos);
            CHECK(message.find("s3cret-Pa55") == std::string::npos);
            CHECK(message.find("6000") == std::string::npos);  // only security settings
        }
    }

    TEST_CASE("a broker certificate the CA did not sign is a failure naming ssl.ca.location") {
        const exo::SecuritySettings settings(
            {{"security.protocol", "SSL"}, {"ssl.ca.location", "/etc/exo/ca.pem"}});
        const auto message = message_of(settings, RD_KAFKA_RESP_ERR__SSL, kWrongCa);
        CHECK(message.find("ssl.ca.location=/etc/exo/ca.pem") != std::string::npos);
        CHECK(message.find("ssl.ca.location must name the CA") != std::string::npos);
        CHECK(message.find("certificate verify failed") != std::string::npos);
    }

    TEST_CASE(
        "TLS trouble on the way, a broker down and a listener of another protocol are retried, "
        "not security failures") {
        const exo::SecuritySettings settings(kScramOverTls);
        CHECK_FALSE(settings
                        .failure(RD_KAFKA_RESP_ERR__SSL,
                                 "ssl://127.0.0.1:9093/1: SSL handshake failed: unexpected eof "
                                 "while reading (after 3ms in state SSL_HANDSHAKE)",
                                 "the reader")
                        .has_value());
        CHECK_FALSE(settings
                        .failure(RD_KAFKA_RESP_ERR__TRANSPORT,
                                 "127.0.0.1:9093/bootstrap: Disconnected while requesting "
                                 "ApiVersion: might be caused by incorrect security.protocol "
                                 "configuration (connecting to a SSL listener?)",
                                 "the reader")
                        .has_value());
        CHECK_FALSE(
            settings
                .failure(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down", "the reader")
                .has_value());
    }

    TEST_CASE("the password is masked even where librdkafka's reason would show it") {
        const exo::SecuritySettings settings(kScramOverTls);
        const auto message =
            message_of(settings, RD_KAFKA_RESP_ERR__AUTHENTICATION,
                       "SASL authentication error: no such user for password s3cret-Pa55");
        CHECK(message.find("s3cret-Pa55") == std::string::npos);
        CHECK(message.find("<hidden>") != std::string::npos);
    }

    TEST_CASE("a client without security settings says it connects in plaintext") {
        const exo::SecuritySettings settings({});
        const auto message =
            message_of(settings, RD_KAFKA_RESP_ERR__AUTHENTICATION, kWrongPassword);
        CHECK(message.find("security.protocol=plaintext (the default)") != std::string::npos);
    }
}

TEST_CASE(
    "a Kafka property librdkafka refuses is named without its value when the one rule of secrets "
    "calls its name secret") {
    exo::KafkaConf conf(rd_kafka_conf_new());
    // librdkafka has no sasl.jaas.config (a Java client's setting): it refuses the property, and
    // the old rule (password, secret) printed this value.
    try {
        exo::set_kafka_property(
            conf.get(), "sasl.jaas.config",
            "ScramLoginModule required username=\"exo\" password=\"hunter2-xyz\";");
        FAIL("librdkafka accepted sasl.jaas.config");
    } catch (const exo::KafkaConfigError& e) {
        const std::string message = e.what();
        CHECK(message.find("hunter2-xyz") == std::string::npos);
        CHECK(message.find("sasl.jaas.config") != std::string::npos);
    }
    // A property that is not secret keeps its value in the message: the operator needs it.
    try {
        exo::set_kafka_property(conf.get(), "session.timeout.ms", "soon");
        FAIL("librdkafka accepted session.timeout.ms=soon");
    } catch (const exo::KafkaConfigError& e) {
        CHECK(std::string(e.what()).find("\"soon\"") != std::string::npos);
    }
}
