#include "kafka/kafka_error.hpp"

#include <array>
#include <string_view>

#include "core/secrets.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {
namespace {

// What the caller does next, appended to every message so a log line alone
// says whether to wait, fix something, or give up on the partitions.
std::string_view next_step(rd_kafka_resp_err_t code, bool retriable) {
    switch (code) {
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
            return "the broker did not acknowledge within message.timeout.ms, so the record may "
                   "or may not have been written; retry (a duplicate is possible)";
        case RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST:
        case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
        case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
        case RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID:
            return "the group has rebalanced and these partitions belong to another member now: "
                   "abandon their in-flight work (the new owner redelivers it)";
        case RD_KAFKA_RESP_ERR__AUTHENTICATION:
        case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
            return "the broker refused the SASL login: check sasl.username and sasl.password "
                   "against the broker's users, and sasl.mechanisms against the mechanisms its "
                   "listener enables (and security.protocol: SASL_PLAINTEXT or SASL_SSL); exo "
                   "does not retry";
        case RD_KAFKA_RESP_ERR__SSL:
            return "the broker's TLS certificate could not be verified: ssl.ca.location must "
                   "name the CA (PEM) that signed it, and the certificate must be for the host "
                   "named in bootstrap.servers; exo does not retry";
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
            return "check the credentials and ACLs in the kafka properties";
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
            return "check that the topic exists (exo does not create topics)";
        case RD_KAFKA_RESP_ERR__FATAL:
            return "the client is unusable: close it and start a new one";
        default:
            break;
    }
    return retriable ? "transient: retry after a backoff"
                     : "not retriable: check the configuration and the brokers' state";
}

std::string describe(rd_kafka_resp_err_t code, const std::string& doing, bool retriable) {
    std::string message = "Kafka: ";
    message += doing;
    message += " failed: ";
    message += rd_kafka_err2str(code);
    message += " (";
    message += rd_kafka_err2name(code);
    message += "); ";
    message += next_step(code, retriable);
    return message;
}

// The settings a security failure's message names, in this order; never sasl.password.
constexpr std::array kShownSettings = {"security.protocol", "sasl.mechanisms", "sasl.mechanism",
                                       "sasl.username", "ssl.ca.location"};

// librdkafka's words for a TLS failure of the certificate check (rdkafka_ssl.c, 2.0.2), as
// opposed to TLS trouble on the way (a connection cut mid-handshake), which a retry gets past.
constexpr std::array kCertificateFailures = {
    "certificate verify failed", "verify broker certificate", "did not provide a certificate"};

void mask_all(std::string& text, const std::string& secret) {
    if (secret.empty()) return;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
        text.replace(at, secret.size(), "<hidden>");
}

}  // namespace

SecuritySettings::SecuritySettings(const std::map<std::string, std::string>& properties) {
    for (const char* name : kShownSettings) {
        const auto it = properties.find(name);
        if (it == properties.end()) continue;
        if (!described_.empty()) described_ += ", ";
        described_ += it->first + "=" + it->second;
    }
    if (described_.empty()) described_ = "security.protocol=plaintext (the default)";
    if (const auto it = properties.find("sasl.password"); it != properties.end())
        password_ = it->second;
}

std::optional<KafkaError> SecuritySettings::failure(rd_kafka_resp_err_t code,
                                                    std::string_view reason,
                                                    std::string_view client) const {
    bool refused = code == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
                   code == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED;
    if (code == RD_KAFKA_RESP_ERR__SSL)
        for (const char* words : kCertificateFailures)
            refused = refused || reason.find(words) != std::string_view::npos;
    if (!refused) return std::nullopt;
    std::string doing = "connecting ";
    doing += client;
    doing += " with ";
    doing += described_;
    doing += " (";
    doing += reason;
    doing += ")";
    mask_all(doing, password_);
    return KafkaError(code, doing, false);
}

KafkaError::KafkaError(rd_kafka_resp_err_t code, const std::string& doing, bool retriable)
    : DependencyError(describe(code, doing, retriable)), code_(code), retriable_(retriable) {}

bool kafka_error_is_retriable(rd_kafka_resp_err_t code) {
    // Codes a later attempt of the same call can get past; everything else
    // (bad config, authorization, a lost assignment, fatal errors) needs a change first.
    static constexpr std::array kTransient = {
        RD_KAFKA_RESP_ERR__TRANSPORT,
        RD_KAFKA_RESP_ERR__RESOLVE,
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
        RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
        RD_KAFKA_RESP_ERR__TIMED_OUT,
        RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE,
        RD_KAFKA_RESP_ERR__QUEUE_FULL,
        RD_KAFKA_RESP_ERR__ISR_INSUFF,
        RD_KAFKA_RESP_ERR__WAIT_COORD,
        RD_KAFKA_RESP_ERR__WAIT_CACHE,
        RD_KAFKA_RESP_ERR__IN_PROGRESS,
        RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS,
        RD_KAFKA_RESP_ERR__RETRY,
        RD_KAFKA_RESP_ERR__NODE_UPDATE,
        RD_KAFKA_RESP_ERR__OUTDATED,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
        RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
        RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
        RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR,
        RD_KAFKA_RESP_ERR_FETCH_SESSION_ID_NOT_FOUND,
        RD_KAFKA_RESP_ERR_INVALID_FETCH_SESSION_EPOCH,
        RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH,
        RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH,
        RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT,
        RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED,
        RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS,
    };
    for (auto transient : kTransient)
        if (code == transient) return true;
    return false;
}

void throw_if_kafka_error(rd_kafka_resp_err_t code, const std::string& doing) {
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    throw KafkaError(code, doing, kafka_error_is_retriable(code));
}

void throw_if_kafka_error(rd_kafka_error_t* error, const std::string& doing) {
    if (error == nullptr) return;
    KafkaErrorHandle owned(error);
    const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
    // The error object's own verdict wins over our list; a fatal error is never retriable.
    const bool retriable =
        rd_kafka_error_is_fatal(error) == 0 &&
        (rd_kafka_error_is_retriable(error) != 0 || kafka_error_is_retriable(code));
    // Its string often carries more context than rd_kafka_err2str (which describe() adds).
    std::string detail = doing;
    const char* text = rd_kafka_error_string(error);
    if (text != nullptr && std::string_view(text) != rd_kafka_err2str(code)) {
        detail += " (";
        detail += text;
        detail += ")";
    }
    if (rd_kafka_error_is_fatal(error) != 0)
        detail += " [fatal: this client is unusable; close it and create a new one]";
    throw KafkaError(code, detail, retriable);
}

void set_kafka_property(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) {
    char reason[512] = {0};
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), reason, sizeof reason) ==
        RD_KAFKA_CONF_OK)
        return;
    const std::string shown =
        exo::is_secret_key(name) ? std::string("<hidden>") : "\"" + value + "\"";
    throw KafkaConfigError("Kafka property '" + name + "' = " + shown +
                           " was rejected by librdkafka: " + reason +
                           "; fix or remove it in the kafka properties of the config");
}

}  // namespace exo
