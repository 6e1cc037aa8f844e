#include "kafka/producer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "kafka/kafka_logging.hpp"

namespace exo {
namespace {

int to_timeout_ms(std::chrono::milliseconds timeout) {
    return static_cast<int>(
        std::clamp<std::chrono::milliseconds::rep>(timeout.count(), 0, INT_MAX));
}

std::string describe_target(const std::string& topic, int partition) {
    return "topic '" + topic + "'" +
           (partition == RD_KAFKA_PARTITION_UA ? std::string()
                                               : " partition " + std::to_string(partition));
}

}  // namespace

KafkaProducer::KafkaProducer(const ProducerOptions& options)
    : options_(options), security_(options.properties), on_delivery_(options.on_delivery) {
    if (options.properties.contains("enable.idempotence"))
        throw KafkaConfigError(
            "Kafka property 'enable.idempotence' cannot be set in the producer properties: exo "
            "always enables it (retries must not duplicate or reorder dead letters); remove it");
    handle_ = new_handle();
}

KafkaHandle KafkaProducer::new_handle() {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    set_kafka_property(conf.get(), "bootstrap.servers", options_.bootstrap_servers);
    for (const auto& [name, value] : options_.properties)
        set_kafka_property(conf.get(), name, value);
    set_kafka_property(conf.get(), "enable.idempotence", "true");
    rd_kafka_conf_set_dr_msg_cb(conf.get(), &KafkaProducer::delivery_trampoline);
    rd_kafka_conf_set_error_cb(conf.get(), &KafkaProducer::error_trampoline);
    rd_kafka_conf_set_opaque(conf.get(), this);

    char reason[512] = {0};
    KafkaHandle handle(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), reason, sizeof reason));
    if (!handle)
        throw KafkaConfigError(std::string("Kafka producer could not be created: ") + reason +
                               "; fix the kafka properties");
    static_cast<void>(conf.release());  // rd_kafka_new took it
    return handle;
}

void KafkaProducer::renew_if_fatal() {
    char reason[512] = {0};
    const rd_kafka_resp_err_t code = rd_kafka_fatal_error(handle_.get(), reason, sizeof reason);
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    spdlog::warn(
        "Kafka producer: librdkafka's idempotent producer failed for good ({}: {}); replacing "
        "it with a new one. The records the old one had not delivered are reported failed and "
        "produced again by their callers (a record it delivered unacknowledged may arrive twice)",
        rd_kafka_err2name(code), reason);
    // Nothing of the old client may arrive later: its queue goes, and its reports say failed.
    rd_kafka_purge(handle_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(handle_.get(), 0);
    handle_ = new_handle();
    ++renewals_;
}

KafkaProducer::~KafkaProducer() {
    rd_kafka_t* rk = handle_.get();
    bool refused = false;
    {
        std::lock_guard lock(failure_mutex_);
        refused = security_failure_.has_value();
    }
    // Refused by the broker: nothing can be delivered, so waiting is for nothing.
    if (!refused) rd_kafka_flush(rk, 5000);
    if (const int left = rd_kafka_outq_len(rk); left > 0) {
        spdlog::warn(
            "Kafka producer: {} records or requests still undelivered after 5 s at shutdown; "
            "dropping them",
            left);
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    }
    std::lock_guard lock(failure_mutex_);
    if (first_failure_)
        spdlog::warn("Kafka producer: a delivery failure was never reported by flush(): {}",
                     KafkaError(first_failure_->code, first_failure_->doing, false).what());
}

void KafkaProducer::produce(const OutgoingRecord& record, std::chrono::milliseconds timeout,
                            std::uint64_t tag) {
    throw_if_security_failure();
    renew_if_fatal();
    rd_kafka_t* rk = handle_.get();
    const int partition = record.partition.value_or(RD_KAFKA_PARTITION_UA);
    // The V_* macros do not parenthesize their arguments, so no expressions in them.
    const void* key_data = record.key ? record.key->data() : nullptr;
    const std::size_t key_size = record.key ? record.key->size() : 0;
    char* value_data = const_cast<char*>(record.value.data());
    const std::size_t value_size = record.value.size();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        // Rebuilt per attempt: producev owns the headers only when it succeeds.
        HeadersHandle headers(rd_kafka_headers_new(record.headers.size()));
        for (const auto& h : record.headers)
            rd_kafka_header_add(headers.get(), h.name.data(), static_cast<ssize_t>(h.name.size()),
                                h.value ? h.value->data() : nullptr,
                                h.value ? static_cast<ssize_t>(h.value->size()) : 0);
        const rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(record.topic.c_str()), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_KEY(key_data, key_size),
            // F_COPY: librdkafka copies the payload; value_data is never written through.
            RD_KAFKA_V_VALUE(value_data, value_size), RD_KAFKA_V_HEADERS(headers.get()),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            // The tag travels as the message's opaque pointer-sized value (a number, never
            // dereferenced: librdkafka only hands it back in the delivery report).
            // NOLINTNEXTLINE(performance-no-int-to-ptr)
            RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<std::uintptr_t>(tag))),
            RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            static_cast<void>(headers.release());  // now owned by the message
            rd_kafka_poll(rk, 0);                  // serve delivery reports so they do not pile up
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && now < deadline) {
            // Delivery reports free queue space; serving them is what waiting means here.
            rd_kafka_poll(rk,
                          std::min(100, to_timeout_ms(std::chrono::ceil<std::chrono::milliseconds>(
                                            deadline - now))));
            continue;
        }
        throw_if_kafka_error(
            err,
            "queueing a record for " + describe_target(record.topic, partition) +
                (err == RD_KAFKA_RESP_ERR__QUEUE_FULL ? " (the local queue stayed full for " +
                                                            std::to_string(timeout.count()) + " ms)"
                                                      : std::string()));
    }
}

void KafkaProducer::flush(std::chrono::milliseconds timeout) {
    // A client that failed for good is replaced at the next produce(), not here: its
    // records' failures (below) are what the caller must hear about first.
    rd_kafka_t* rk = handle_.get();
    // In slices, so a security failure reported meanwhile ends the wait: without a
    // connection nothing is delivered before message.timeout.ms.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    do {
        throw_if_security_failure();
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        err = rd_kafka_flush(rk, std::clamp(to_timeout_ms(left), 0, 100));
    } while (err == RD_KAFKA_RESP_ERR__TIMED_OUT && std::chrono::steady_clock::now() < deadline);
    throw_if_security_failure();
    std::optional<DeliveryFailure> failure;
    {
        std::lock_guard lock(failure_mutex_);
        failure = std::exchange(first_failure_, std::nullopt);
    }
    if (failure)
        throw KafkaError(failure->code, failure->doing, kafka_error_is_retriable(failure->code));
    if (const int left = rd_kafka_outq_len(rk); err != RD_KAFKA_RESP_ERR_NO_ERROR || left > 0)
        throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT,
                         "flushing the producer (" + std::to_string(left) +
                             " records or requests still undelivered after " +
                             std::to_string(timeout.count()) +
                             " ms; they stay queued and a later flush reports them)",
                         true);
}

void KafkaProducer::purge() {
    rd_kafka_t* rk = handle_.get();
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 0);  // serve the purged records' delivery reports
    std::lock_guard lock(failure_mutex_);
    first_failure_.reset();
}

void KafkaProducer::throw_if_security_failure() {
    std::lock_guard lock(failure_mutex_);
    if (security_failure_) throw *security_failure_;
}

void KafkaProducer::error_trampoline(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    auto* self = static_cast<KafkaProducer*>(opaque);
    const auto code = static_cast<rd_kafka_resp_err_t>(err);
    const std::string_view why = reason != nullptr ? reason : rd_kafka_err2str(code);
    try {
        if (auto failure = self->security_.failure(code, why, "the producer")) {
            std::lock_guard lock(self->failure_mutex_);
            if (!self->security_failure_) {
                spdlog::error("{}", failure->what());
                self->security_failure_ = std::move(failure);
            }
            return;
        }
        // What librdkafka logs itself when no error callback is set.
        kafka_logger()->error("ERROR [{}] {}", rd_kafka_name(rk), why);
    } catch (...) {
        // Out of memory: nothing to do; a C++ exception must not unwind through librdkafka.
    }
}

void KafkaProducer::delivery_trampoline(rd_kafka_t*, const rd_kafka_message_t* message,
                                        void* opaque) {
    auto* self = static_cast<KafkaProducer*>(opaque);
    if (self->on_delivery_) {
        try {
            self->on_delivery_(reinterpret_cast<std::uintptr_t>(message->_private), message->err);
        } catch (...) {
            // Must not throw into librdkafka; the failure below still reaches flush().
        }
    }
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    // Runs inside rd_kafka_poll/flush on a caller's thread; must not throw into librdkafka.
    std::string doing;
    try {
        doing = "delivering a record to " +
                describe_target(rd_kafka_topic_name(message->rkt), message->partition) + " (" +
                // Not rd_kafka_message_errstr(): on a delivery report its "error
                // string" is the payload, not NUL-terminated, and must not be logged.
                rd_kafka_err2str(message->err) + ")";
    } catch (...) {
        // Out of memory while describing it: the code alone still fails the flush.
    }
    std::lock_guard lock(self->failure_mutex_);
    if (!self->first_failure_)
        self->first_failure_ = DeliveryFailure{message->err, std::move(doing)};
}

}  // namespace exo
