#pragma once
// Every librdkafka failure is translated here, in one place.
#include <librdkafka/rdkafka.h>

#include <string>

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

// rd_kafka_conf_set, throwing KafkaConfigError naming the property and
// librdkafka's reason (values of secret-looking properties are not echoed).
void set_kafka_property(rd_kafka_conf_t* conf, const std::string& name, const std::string& value);

}  // namespace exo
