#include "kafka/topic_admin.hpp"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "kafka/rdkafka_handles.hpp"

namespace exo {
namespace {

constexpr int kOperationTimeoutMs = 30000;
constexpr int kAnswerTimeoutMs = 60000;

// Any client type serves the admin API; a producer needs no group.
KafkaHandle admin_client(const std::string& bootstrap) {
    char err[512];
    KafkaConf conf(rd_kafka_conf_new());
    if (rd_kafka_conf_set(conf.get(), "bootstrap.servers", bootstrap.c_str(), err, sizeof err) !=
            RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf.get(), "log_level", "3", err, sizeof err) != RD_KAFKA_CONF_OK)
        throw std::runtime_error(std::string("Kafka admin client: ") + err);
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), err, sizeof err));
    if (!rk) throw std::runtime_error(std::string("cannot create a Kafka admin client: ") + err);
    static_cast<void>(conf.release());  // rd_kafka_new took it
    return rk;
}

AdminOptionsHandle admin_options(rd_kafka_t* rk, rd_kafka_admin_op_t op) {
    char err[512];
    AdminOptionsHandle options(rd_kafka_AdminOptions_new(rk, op));
    if (rd_kafka_AdminOptions_set_operation_timeout(options.get(), kOperationTimeoutMs, err,
                                                    sizeof err) != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error(err);
    return options;
}

// The event answering the request on `queue`; throws if none came or it is a request error.
EventHandle answer(rd_kafka_queue_t* queue, const std::string& what, const std::string& bootstrap) {
    EventHandle event(rd_kafka_queue_poll(queue, kAnswerTimeoutMs));
    if (!event)
        throw std::runtime_error(what + ": no answer from " + bootstrap + " in " +
                                 std::to_string(kAnswerTimeoutMs / 1000) + " s");
    if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error(what + ": " + rd_kafka_event_error_string(event.get()));
    return event;
}

std::string topic_error(const rd_kafka_topic_result_t* t) {
    const char* detail = rd_kafka_topic_result_error_string(t);
    return std::string(rd_kafka_topic_result_name(t)) + ": " +
           rd_kafka_err2str(rd_kafka_topic_result_error(t)) +
           (detail != nullptr ? std::string(" (") + detail + ")" : std::string());
}

// True once the metadata lists `topic` with `partitions` partitions, each with a leader.
bool topic_led(rd_kafka_t* rk, const std::string& topic, int partitions) {
    const rd_kafka_metadata_t* raw = nullptr;
    if (rd_kafka_metadata(rk, 1, nullptr, &raw, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
    const MetadataHandle md(raw);
    for (int i = 0; i < md->topic_cnt; ++i) {
        const auto& t = md->topics[i];
        if (topic != t.topic) continue;
        if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR || t.partition_cnt < partitions) return false;
        for (int p = 0; p < t.partition_cnt; ++p)
            if (t.partitions[p].err != RD_KAFKA_RESP_ERR_NO_ERROR || t.partitions[p].leader < 0)
                return false;
        return true;
    }
    return false;
}

}  // namespace

void create_topics(const std::string& bootstrap, const TopicsToCreate& request) {
    const KafkaHandle rk = admin_client(bootstrap);
    char reason[512];
    std::vector<NewTopicHandle> owned;
    std::vector<rd_kafka_NewTopic_t*> raw;
    for (const auto& [name, partitions] : request.topics) {
        // -1: the broker's default.replication.factor (scripts/kafka.sh sets it to its nodes).
        owned.emplace_back(
            rd_kafka_NewTopic_new(name.c_str(), partitions, -1, reason, sizeof reason));
        if (!owned.back()) throw std::runtime_error("topic " + name + ": " + reason);
        for (const auto& [key, value] : request.config)
            if (rd_kafka_NewTopic_set_config(owned.back().get(), key.c_str(), value.c_str()) !=
                RD_KAFKA_RESP_ERR_NO_ERROR)
                throw std::runtime_error("topic " + name + ": cannot set " + key);
        raw.push_back(owned.back().get());
    }
    const QueueHandle queue(rd_kafka_queue_new(rk.get()));
    const auto options = admin_options(rk.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_CreateTopics(rk.get(), raw.data(), raw.size(), options.get(), queue.get());
    const auto event = answer(queue.get(), "CreateTopics", bootstrap);
    std::size_t count = 0;
    const auto* const* results = rd_kafka_CreateTopics_result_topics(
        rd_kafka_event_CreateTopics_result(event.get()), &count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto err = rd_kafka_topic_result_error(results[i]);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR ||
            (request.existing_ok && err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS))
            continue;
        throw std::runtime_error("creating topic " + topic_error(results[i]));
    }
    for (const auto& [name, partitions] : request.topics) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!topic_led(rk.get(), name, partitions)) {
            if (std::chrono::steady_clock::now() >= deadline)
                throw std::runtime_error("topic " + name +
                                         " has no leader for every partition 30 s after it was "
                                         "created");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
}

void delete_topics(const std::string& bootstrap, const std::vector<std::string>& topics) {
    if (topics.empty()) return;
    const KafkaHandle rk = admin_client(bootstrap);
    std::vector<DeleteTopicHandle> owned;
    std::vector<rd_kafka_DeleteTopic_t*> raw;
    for (const auto& name : topics) {
        owned.emplace_back(rd_kafka_DeleteTopic_new(name.c_str()));
        raw.push_back(owned.back().get());
    }
    const QueueHandle queue(rd_kafka_queue_new(rk.get()));
    const auto options = admin_options(rk.get(), RD_KAFKA_ADMIN_OP_DELETETOPICS);
    rd_kafka_DeleteTopics(rk.get(), raw.data(), raw.size(), options.get(), queue.get());
    const auto event = answer(queue.get(), "DeleteTopics", bootstrap);
    std::size_t count = 0;
    const auto* const* results = rd_kafka_DeleteTopics_result_topics(
        rd_kafka_event_DeleteTopics_result(event.get()), &count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto err = rd_kafka_topic_result_error(results[i]);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
            throw std::runtime_error("deleting topic " + topic_error(results[i]));
    }
}

}  // namespace exo
