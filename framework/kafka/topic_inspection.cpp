#include "kafka/topic_inspection.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <mutex>
#include <optional>
#include <string_view>

#include "kafka/kafka_error.hpp"
#include "kafka/kafka_logging.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {
namespace {

int to_timeout_ms(std::chrono::milliseconds timeout) {
    return static_cast<int>(
        std::clamp<std::chrono::milliseconds::rep>(timeout.count(), 1, INT_MAX));
}

std::optional<std::size_t> number(const char* text) {
    if (text == nullptr) return std::nullopt;
    const std::string_view s(text);
    std::size_t n = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return n;
}

// What librdkafka's error callback found wrong with the client's security settings (a
// refused SASL login, a certificate that failed verification): librdkafka only logs those
// and reconnects for ever, so the inspection throws it instead (not retriable), as the
// consumer and the producers do (SecuritySettings in kafka_error.hpp).
struct SecurityWatch {
    explicit SecurityWatch(const ProducerOptions& client) : settings(client.properties) {}

    static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
        auto* self = static_cast<SecurityWatch*>(opaque);
        const auto code = static_cast<rd_kafka_resp_err_t>(err);
        const std::string_view why = reason != nullptr ? reason : rd_kafka_err2str(code);
        try {
            if (auto failure = self->settings.failure(code, why, "the topic check")) {
                std::lock_guard lock(self->mutex);
                if (!self->failure) self->failure = std::move(failure);
                return;
            }
            kafka_logger()->error("ERROR [{}] {}", rd_kafka_name(rk), why);
        } catch (...) {
            // Out of memory: a C++ exception must not unwind through librdkafka.
        }
    }
    // Serves the client's pending error callbacks, then throws what they found.
    void throw_if_failed(rd_kafka_t* rk) {
        rd_kafka_poll(rk, 0);
        std::lock_guard lock(mutex);
        if (failure) throw *failure;
    }

    const SecuritySettings settings;
    std::mutex mutex;
    std::optional<KafkaError> failure;  // guarded by mutex
};

// The admin API runs on any client: a producer that never produces.
KafkaHandle admin_client(const ProducerOptions& client, SecurityWatch& watch) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    set_kafka_property(conf.get(), "bootstrap.servers", client.bootstrap_servers);
    for (const auto& [name, value] : client.properties) set_kafka_property(conf.get(), name, value);
    rd_kafka_conf_set_error_cb(conf.get(), &SecurityWatch::on_error);
    rd_kafka_conf_set_opaque(conf.get(), &watch);
    char reason[512] = {0};
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), reason, sizeof reason));
    if (!rk)
        throw KafkaConfigError(std::string("Kafka client could not be created: ") + reason +
                               "; fix the kafka properties");
    static_cast<void>(conf.release());  // rd_kafka_new took it
    return rk;
}

// Fills the limits of the topics that exist, and auto_create, from one DescribeConfigs.
void describe_configs(rd_kafka_t* rk, int broker_id, TopicInspection& out,
                      std::chrono::milliseconds timeout) {
    std::vector<ConfigResourceHandle> owned;
    std::vector<rd_kafka_ConfigResource_t*> raw;
    for (const auto& [name, facts] : out.topics)
        if (facts.exists)
            owned.emplace_back(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, name.c_str()));
    const std::string broker = std::to_string(broker_id);
    if (broker_id >= 0)
        owned.emplace_back(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, broker.c_str()));
    for (const auto& r : owned) raw.push_back(r.get());
    if (raw.empty()) return;
    char reason[512] = {0};
    const AdminOptionsHandle options(
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS));
    rd_kafka_AdminOptions_set_request_timeout(options.get(), to_timeout_ms(timeout), reason,
                                              sizeof reason);
    const QueueHandle queue(rd_kafka_queue_new(rk));
    rd_kafka_DescribeConfigs(rk, raw.data(), raw.size(), options.get(), queue.get());
    const EventHandle event(rd_kafka_queue_poll(queue.get(), to_timeout_ms(timeout) + 1000));
    if (!event) {
        out.limits_unknown = "DescribeConfigs got no answer";
        return;
    }
    if (const auto err = rd_kafka_event_error(event.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.limits_unknown = std::string("DescribeConfigs failed: ") +
                             rd_kafka_event_error_string(event.get()) + " (" +
                             rd_kafka_err2name(err) + ")";
        return;
    }
    std::size_t count = 0;
    const auto* const* resources = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(event.get()), &count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto* resource = resources[i];
        const std::string name = rd_kafka_ConfigResource_name(resource);
        const bool is_topic = rd_kafka_ConfigResource_type(resource) == RD_KAFKA_RESOURCE_TOPIC;
        if (const auto err = rd_kafka_ConfigResource_error(resource);
            err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (!out.limits_unknown.empty()) out.limits_unknown += "; ";
            out.limits_unknown += (is_topic ? "topic '" + name + "'" : "broker " + name) + ": " +
                                  rd_kafka_err2name(err);
            continue;
        }
        std::size_t entries = 0;
        const auto* const* configs = rd_kafka_ConfigResource_configs(resource, &entries);
        for (std::size_t e = 0; e < entries; ++e) {
            const std::string_view key = rd_kafka_ConfigEntry_name(configs[e]);
            const char* value = rd_kafka_ConfigEntry_value(configs[e]);
            if (is_topic && key == "max.message.bytes") {
                if (auto it = out.topics.find(name); it != out.topics.end())
                    it->second.max_message_bytes = number(value);
            } else if (!is_topic && key == "auto.create.topics.enable" && value != nullptr) {
                out.auto_create = std::string_view(value) == "true";
            }
        }
    }
}

}  // namespace

TopicInspection inspect_topics(const ProducerOptions& client,
                               const std::vector<std::string>& topics,
                               std::chrono::milliseconds timeout) {
    TopicInspection out;
    for (const auto& t : topics) out.topics.emplace(t, TopicFacts{});
    SecurityWatch watch(client);  // outlives the client, whose callbacks point at it
    const KafkaHandle rk = admin_client(client, watch);
    // Every topic: a request naming a missing one could create it (allow.auto.create.topics
    // is true for producers), this one never does. In slices, so a refused login ends the
    // wait within half a second rather than at the timeout.
    const rd_kafka_metadata_t* raw = nullptr;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    // A transport error (a TLS handshake refused, all brokers down) may come before the
    // callback names its cause: retried to the deadline too, serving the callbacks meanwhile.
    for (;;) {
        watch.throw_if_failed(rk.get());
        err = rd_kafka_metadata(rk.get(), 1, nullptr, &raw, 500);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR || !kafka_error_is_retriable(err) ||
            std::chrono::steady_clock::now() >= deadline)
            break;
        rd_kafka_poll(rk.get(), 100);
    }
    watch.throw_if_failed(rk.get());
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw KafkaError(err, "reading the brokers' topic list to check the topics exo produces to",
                         kafka_error_is_retriable(err));
    const MetadataHandle md(raw);
    for (int i = 0; i < md->topic_cnt; ++i) {
        const auto& t = md->topics[i];
        auto it = out.topics.find(t.topic);
        if (it == out.topics.end()) continue;
        it->second.exists = t.err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART &&
                            t.err != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    }
    describe_configs(rk.get(), md->orig_broker_id, out, timeout);
    return out;
}

}  // namespace exo
