#include "kafka/group_progress.hpp"

#include <stdexcept>

#include "kafka/kafka_error.hpp"
#include "kafka/kafka_logging.hpp"
#include "kafka/kafka_names.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {

std::optional<std::int64_t> group_lag(const std::string& bootstrap, const std::string& group,
                                      const std::string& topic) {
    char err[512];
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    rd_kafka_conf_set(conf.get(), "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf.get(), "group.id", group.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf.get(), "log_level", "3", err, sizeof err);
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), err, sizeof err));
    if (!rk) throw std::runtime_error(std::string("cannot create a Kafka client: ") + err);
    static_cast<void>(conf.release());  // owned by rk now

    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk.get(), 1, nullptr, &md, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return std::nullopt;
    int partitions = 0;
    for (int i = 0; i < md->topic_cnt; ++i)
        if (topic == md->topics[i].topic) partitions = md->topics[i].partition_cnt;
    rd_kafka_metadata_destroy(md);
    if (partitions == 0) return std::nullopt;

    TopicPartitionList list(rd_kafka_topic_partition_list_new(partitions));
    for (int p = 0; p < partitions; ++p)
        rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p);
    if (rd_kafka_committed(rk.get(), list.get(), 5000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return std::nullopt;
    std::int64_t lag = 0;
    for (int p = 0; p < partitions; ++p) {
        std::int64_t low = 0, high = 0;
        if (rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &low, &high, 5000) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
            return std::nullopt;
        std::int64_t committed = list->elems[p].offset;
        if (high == 0) continue;
        if (committed < 0) return std::nullopt;
        lag += high - committed;
    }
    return lag;
}

std::map<int, std::optional<std::int64_t>> committed_offsets(
    const std::string& bootstrap, const std::map<std::string, std::string>& properties,
    const std::string& group, const std::string& topic, const std::vector<int>& partitions,
    std::chrono::milliseconds timeout) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    set_kafka_property(conf.get(), "bootstrap.servers", bootstrap);
    for (const auto& [name, value] : properties)
        if (!is_reserved_consumer_property(name)) set_kafka_property(conf.get(), name, value);
    // The group's id, to ask for its offsets; never subscribed, so it never joins.
    set_kafka_property(conf.get(), "group.id", group);
    set_kafka_property(conf.get(), "enable.auto.commit", "false");
    char err[512] = {0};
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), err, sizeof err));
    if (!rk)
        throw KafkaConfigError(std::string("Kafka client could not be created: ") + err +
                               "; fix the kafka properties");
    static_cast<void>(conf.release());  // owned by rk now
    TopicPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (int p : partitions) rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p);
    throw_if_kafka_error(
        rd_kafka_committed(rk.get(), list.get(), static_cast<int>(timeout.count())),
        "reading the offsets group '" + group + "' committed on topic '" + topic + "'");
    std::map<int, std::optional<std::int64_t>> out;
    for (int i = 0; i < list->cnt; ++i) {
        const auto& e = list->elems[i];
        throw_if_kafka_error(e.err, "reading the offset group '" + group +
                                        "' committed on topic '" + topic + "' partition " +
                                        std::to_string(e.partition));
        out[e.partition] = e.offset >= 0 ? std::optional<std::int64_t>(e.offset) : std::nullopt;
    }
    rd_kafka_consumer_close(rk.get());
    return out;
}

}  // namespace exo
