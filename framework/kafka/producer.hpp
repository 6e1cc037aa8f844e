#pragma once
// A synchronous-feeling producer: produce() queues, flush() waits for every
// delivery report and throws if any failed. Used for dead letters (where the
// offset may only move after the broker acknowledged) and the demo producer.
// Thread-safety: one thread at a time (each of exo's producers has one owner: a
// worker's dead letters, the outbox relay's thread, an operator command);
// flush() reports failures of the records produced before it.
//
// A client librdkafka declares failed for good (rd_kafka_fatal_error: its idempotent
// producer's sequence numbers and the broker's disagree, OUT_OF_ORDER_SEQUENCE_NUMBER
// after a partition leader's crash, seen with librdkafka 2.0.2) is replaced by a new
// one at the next produce(): its undelivered records are purged (reported failed, so
// flush() throws for them and the caller produces them again), and the new client has
// a new producer id, so a record the old one delivered without an acknowledgement may
// be in Kafka twice. Every caller is at least once already (dead letters, the outbox
// relay with its exo-outbox-id, replay).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <exo/record.hpp>
#include "kafka/kafka_error.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {

// A delivery report for one record: the tag given to produce() and librdkafka's
// verdict (RD_KAFKA_RESP_ERR_NO_ERROR: acknowledged). Called inside produce(),
// flush() or purge() on the caller's thread; must not throw.
using DeliveryReport = std::function<void(std::uint64_t tag, rd_kafka_resp_err_t error)>;

struct ProducerOptions {
    std::string bootstrap_servers;
    std::map<std::string, std::string> properties;  // extra librdkafka properties
    DeliveryReport on_delivery = {};                // empty: failures are only reported by flush()
};

struct OutgoingRecord {
    std::string topic;
    std::optional<int> partition;    // unset: partitioned by key
    std::optional<std::string> key;  // Kafka message key
    std::string value;
    std::vector<RecordHeader> headers;
};

class KafkaProducer {
public:
    // Throws KafkaConfigError for a bad property. Idempotence is enabled.
    explicit KafkaProducer(const ProducerOptions& options);
    KafkaProducer(const KafkaProducer&) = delete;
    KafkaProducer& operator=(const KafkaProducer&) = delete;
    ~KafkaProducer();  // flushes for up to 5 s, then drops what is left

    // A failure of the security settings (SecuritySettings in kafka_error.hpp: the broker
    // refused the SASL login, or its TLS certificate could not be verified) is sticky: once
    // librdkafka reported it, produce() and flush() throw it (not retriable) at once.

    // Queues one record; throws KafkaError if librdkafka refuses it (queue full is
    // retried internally by polling until `timeout` passes).
    // `tag` is handed back to ProducerOptions::on_delivery with the record's report.
    void produce(const OutgoingRecord& record,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(10000),
                 std::uint64_t tag = 0);
    // Waits until every queued record was acknowledged. Throws KafkaError naming the
    // first failure if any record since the last flush failed, or on timeout.
    void flush(std::chrono::milliseconds timeout);
    // Drops every record not yet delivered (queued or in flight) and forgets their
    // failures: after a flush that timed out, so a record given up on is never
    // delivered later beside the copy a retry produces.
    void purge();

    // How many times a client that failed for good was replaced (renew_if_fatal).
    [[nodiscard]] int renewals() const noexcept { return renewals_; }

private:
    // A librdkafka producer on options_, its callbacks pointing at this object.
    // Throws KafkaConfigError.
    KafkaHandle new_handle();
    // Replaces handle_ when librdkafka declared it failed for good (see above).
    void renew_if_fatal();
    static void delivery_trampoline(rd_kafka_t*, const rd_kafka_message_t*, void* opaque);
    // librdkafka's client errors, served by rd_kafka_poll/flush on a caller's thread.
    static void error_trampoline(rd_kafka_t* rk, int err, const char* reason, void* opaque);
    void throw_if_security_failure();

    struct DeliveryFailure {
        rd_kafka_resp_err_t code;
        std::string doing;  // which record failed, for the KafkaError message
    };

    // Destruction order: handle_ is declared last so it is destroyed first, while
    // the mutex and slot its delivery callback writes to still exist.
    std::mutex failure_mutex_;
    std::optional<DeliveryFailure> first_failure_;  // guarded by failure_mutex_
    std::optional<KafkaError> security_failure_;    // guarded by failure_mutex_; never reset
    ProducerOptions options_;                       // what a renewed client is made of
    SecuritySettings security_;
    DeliveryReport on_delivery_;
    int renewals_ = 0;
    KafkaHandle handle_;
};

}  // namespace exo
