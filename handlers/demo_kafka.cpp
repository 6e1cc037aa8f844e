#include "demo_kafka.hpp"

#include <librdkafka/rdkafka.h>

#include <memory>
#include <stdexcept>

namespace exo::demo {
namespace {

struct ClientDeleter {
    void operator()(rd_kafka_t* p) const noexcept { rd_kafka_destroy(p); }
};
struct PartitionsDeleter {
    void operator()(rd_kafka_topic_partition_list_t* p) const noexcept {
        rd_kafka_topic_partition_list_destroy(p);
    }
};
using Client = std::unique_ptr<rd_kafka_t, ClientDeleter>;

// The first delivery failure, kept by the delivery callback.
struct Deliveries {
    std::string failure;
};

Client make_client(rd_kafka_type_t type, const std::string& bootstrap,
                   const std::vector<std::pair<const char*, std::string>>& properties,
                   Deliveries* deliveries = nullptr) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto set = [&](const char* name, const std::string& value) {
        if (rd_kafka_conf_set(conf, name, value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            throw std::runtime_error(std::string("Kafka property ") + name + ": " + err);
        }
    };
    set("bootstrap.servers", bootstrap);
    set("log_level", "3");
    for (const auto& [name, value] : properties) set(name, value);
    if (deliveries) {
        rd_kafka_conf_set_opaque(conf, deliveries);
        rd_kafka_conf_set_dr_msg_cb(conf,
                                    [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
                                        auto* d = static_cast<Deliveries*>(opaque);
                                        if (m->err && d->failure.empty())
                                            d->failure = rd_kafka_err2str(m->err);
                                    });
    }
    Client client(rd_kafka_new(type, conf, err, sizeof err));
    if (!client) {
        rd_kafka_conf_destroy(conf);
        throw std::runtime_error(std::string("cannot create a Kafka client: ") + err);
    }
    return client;  // rd_kafka_new owns the conf now
}

}  // namespace

void produce_all(const std::string& bootstrap, const std::vector<DemoRecord>& records) {
    Deliveries deliveries;
    auto producer =
        make_client(RD_KAFKA_PRODUCER, bootstrap, {{"enable.idempotence", "true"}}, &deliveries);
    for (const auto& r : records) {
        for (;;) {
            const auto err = rd_kafka_producev(
                producer.get(), RD_KAFKA_V_TOPIC(r.topic.c_str()),
                RD_KAFKA_V_PARTITION(r.partition.value_or(RD_KAFKA_PARTITION_UA)),
                RD_KAFKA_V_KEY(r.key.data(), r.key.size()),
                RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
            if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                throw std::runtime_error("cannot produce to '" + r.topic +
                                         "': " + rd_kafka_err2str(err));
            rd_kafka_poll(producer.get(), 100);  // the queue drains as deliveries come back
        }
        rd_kafka_poll(producer.get(), 0);
    }
    if (rd_kafka_flush(producer.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("Kafka did not acknowledge every record within 60 s");
    if (!deliveries.failure.empty())
        throw std::runtime_error("Kafka refused a record: " + deliveries.failure);
}

std::optional<std::int64_t> consumer_lag(const std::string& bootstrap, const std::string& group,
                                         const std::string& topic) {
    // A client with the group's id reads its committed offsets without joining it.
    auto client = make_client(RD_KAFKA_CONSUMER, bootstrap, {{"group.id", group}});
    const rd_kafka_metadata_t* metadata = nullptr;
    if (rd_kafka_metadata(client.get(), 1, nullptr, &metadata, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return std::nullopt;
    int partitions = 0;
    for (int i = 0; i < metadata->topic_cnt; ++i)
        if (topic == metadata->topics[i].topic) partitions = metadata->topics[i].partition_cnt;
    rd_kafka_metadata_destroy(metadata);
    if (partitions == 0) return std::nullopt;

    std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionsDeleter> committed(
        rd_kafka_topic_partition_list_new(partitions));
    for (int p = 0; p < partitions; ++p)
        rd_kafka_topic_partition_list_add(committed.get(), topic.c_str(), p);
    if (rd_kafka_committed(client.get(), committed.get(), 5000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return std::nullopt;
    std::int64_t lag = 0;
    for (int p = 0; p < partitions; ++p) {
        std::int64_t low = 0, high = 0;
        if (rd_kafka_query_watermark_offsets(client.get(), topic.c_str(), p, &low, &high, 5000) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
            return std::nullopt;
        if (high == 0) continue;
        const std::int64_t offset = committed->elems[p].offset;
        if (offset < 0) return std::nullopt;
        lag += high - offset;
    }
    return lag;
}

}  // namespace exo::demo
