#include "apache_kafka.hpp"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>

#include "kafka/kafka_logging.hpp"
#include "kafka/rdkafka_handles.hpp"
#include "kafka/topic_admin.hpp"
#include "records.hpp"
#include "support.hpp"

namespace exo::testing {
namespace {

KafkaHandle admin_client(const std::string& bootstrap) {
    return test_client(bootstrap, RD_KAFKA_PRODUCER);  // the admin API runs on any client
}

}  // namespace

std::string apache_kafka_bootstrap() {
    const char* kind = std::getenv("EXO_KAFKA_KIND");
    if (kind == nullptr || std::string(kind) != "apache")
        throw std::runtime_error(
            "EXO_KAFKA_KIND is not \"apache\": this case needs the real Apache Kafka of "
            "scripts/kafka.sh; run it through scripts/test.sh (its real-broker stage) or "
            "EXO_INTEGRATION_PARTS=real-kafka scripts/integration.sh, or source the kafka.env "
            "of `scripts/kafka.sh start DIR` after services.env");
    return required_env("EXO_KAFKA_BOOTSTRAP");
}

void create_topics(const std::string& bootstrap,
                   const std::vector<std::pair<std::string, int>>& topics,
                   const std::map<std::string, std::string>& config) {
    exo::create_topics(bootstrap, {.topics = topics, .config = config, .existing_ok = true});
}

int partition_leader(const std::string& bootstrap, const std::string& topic, int partition) {
    const KafkaHandle rk = admin_client(bootstrap);
    const rd_kafka_metadata_t* raw = nullptr;
    const auto err = rd_kafka_metadata(rk.get(), 1, nullptr, &raw, 10000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("reading the metadata of " + bootstrap + ": " +
                                 rd_kafka_err2str(err));
    const MetadataHandle md(raw);
    for (int i = 0; i < md->topic_cnt; ++i) {
        const auto& t = md->topics[i];
        if (topic != t.topic) continue;
        for (int p = 0; p < t.partition_cnt; ++p)
            if (t.partitions[p].id == partition) return t.partitions[p].leader;
    }
    throw std::runtime_error("the metadata of " + bootstrap + " lists no partition " + topic + "[" +
                             std::to_string(partition) + "]");
}

int group_coordinator(const std::string& bootstrap, const std::string& group) {
    const KafkaHandle rk = admin_client(bootstrap);
    const QueueHandle queue(rd_kafka_queue_new(rk.get()));
    const char* groups[] = {group.c_str()};
    rd_kafka_DescribeConsumerGroups(rk.get(), groups, 1, nullptr, queue.get());
    const EventHandle event(rd_kafka_queue_poll(queue.get(), 10000));
    if (!event || rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
    const auto* result = rd_kafka_event_DescribeConsumerGroups_result(event.get());
    std::size_t count = 0;
    const auto* const* described = rd_kafka_DescribeConsumerGroups_result_groups(result, &count);
    if (count != 1 || rd_kafka_ConsumerGroupDescription_error(described[0]) != nullptr) return -1;
    const auto* node = rd_kafka_ConsumerGroupDescription_coordinator(described[0]);
    return node != nullptr ? rd_kafka_Node_id(node) : -1;
}

int under_replicated_partitions(const std::string& bootstrap) {
    const KafkaHandle rk = admin_client(bootstrap);
    const rd_kafka_metadata_t* raw = nullptr;
    if (rd_kafka_metadata(rk.get(), 1, nullptr, &raw, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return -1;
    const MetadataHandle md(raw);
    int under = 0;
    for (int i = 0; i < md->topic_cnt; ++i)
        for (int p = 0; p < md->topics[i].partition_cnt; ++p) {
            const auto& partition = md->topics[i].partitions[p];
            if (partition.isr_cnt < partition.replica_cnt) ++under;
        }
    return under;
}

GroupState describe_group(const std::string& bootstrap, const std::string& group) {
    const KafkaHandle rk = admin_client(bootstrap);
    const rd_kafka_group_list* raw = nullptr;
    if (rd_kafka_list_groups(rk.get(), group.c_str(), &raw, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return {};
    const std::unique_ptr<const rd_kafka_group_list, void (*)(const rd_kafka_group_list*)> list(
        raw, rd_kafka_group_list_destroy);
    for (int i = 0; i < list->group_cnt; ++i) {
        const auto& g = list->groups[i];
        if (group == g.group && g.err == RD_KAFKA_RESP_ERR_NO_ERROR)
            return {g.state ? g.state : "", g.member_cnt};
    }
    return {};
}

}  // namespace exo::testing
