#pragma once
// Every librdkafka failure is translated here, in one place.
#include <librdkafka/rdkafka.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <exo/errors.hpp>

namespace exo {

// Kafka failed; `retriable()` says whether trying the same call again may succeed.
class KafkaError : public DependencyError {
public:
    KafkaError(rd_kafka_resp_err_t code, const std::string& doing, bool retriable);
    rd_kafka_resp_err_t code() const { return code_; }
    bool retriable() const { return retriable_; }

private:
    rd_kafka_resp_err_t code_;
    bool retriable_;
};

// A librdkafka property was rejected: fix the config (exit code 2).
class KafkaConfigError : public UsageError {
public:
    using UsageError::UsageError;
};

// Throws KafkaError for `code` unless it is RD_KAFKA_RESP_ERR_NO_ERROR.
void throw_if_kafka_error(rd_kafka_resp_err_t code, const std::string& doing);
// Takes ownership of `error` (may be null: no error) and throws if set.
void throw_if_kafka_error(rd_kafka_error_t* error, const std::string& doing);

// Whether a call that failed with `code` may succeed if tried again later
// (broker moving, coordinator loading, network down, queue full).
bool kafka_error_is_retriable(rd_kafka_resp_err_t code);

// A client's security settings (from its librdkafka properties), to tell a failure they cause
// from a transient one, and to say which of them to fix. Pure: no librdkafka handle, no I/O.
//
// A failure of the security settings is one no retry gets past: the broker refused the SASL
// credentials or mechanism (RD_KAFKA_RESP_ERR__AUTHENTICATION), or the broker's TLS
// certificate could not be verified (RD_KAFKA_RESP_ERR__SSL saying so; other TLS trouble, such
// as a connection cut mid-handshake by a broker going down, is retried). librdkafka reports
// these through the error callback, not from a call, and retries the connection forever:
// exo's clients turn them into a KafkaError instead (not retriable), as Kafka's Java client
// throws AuthenticationException from poll(). A client of the wrong security.protocol looks
// to librdkafka like a broker going away (RD_KAFKA_RESP_ERR__TRANSPORT): retried, and
// librdkafka's log line says "might be caused by incorrect security.protocol".
class SecuritySettings {
public:
    explicit SecuritySettings(const std::map<std::string, std::string>& properties);

    // The error to throw for the client error (`code`, librdkafka's `reason`) of `client`
    // ("the consumer of group 'g'"), or nullopt when it is not a failure of these settings.
    // Its message names what to check and the settings in use (security.protocol,
    // sasl.mechanisms, sasl.username, ssl.ca.location), never sasl.password: the password's
    // value is masked even where librdkafka's reason would show it.
    std::optional<KafkaError> failure(rd_kafka_resp_err_t code, std::string_view reason,
                                      std::string_view client) const;

private:
    std::string described_;  // the settings in use, "name=value, ..."
    std::string password_;   // sasl.password, only to mask it
};

// rd_kafka_conf_set, throwing KafkaConfigError naming the property and
// librdkafka's reason (values of secret-looking properties are not echoed).
void set_kafka_property(rd_kafka_conf_t* conf, const std::string& name, const std::string& value);

}  // namespace exo
