#pragma once
// One owning wrapper per librdkafka handle, all in one header
// (modern-cpp-kafka's RdKafkaHelper.h). Copying is impossible; hand-offs are
// std::move. rd_kafka_*_new functions that take ownership of an argument (e.g.
// rd_kafka_new takes the conf on success) must be followed by .release().
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <memory>

namespace exo {

struct KafkaHandleDeleter {
    void operator()(rd_kafka_t* p) const noexcept { rd_kafka_destroy(p); }
};
struct KafkaConfDeleter {
    void operator()(rd_kafka_conf_t* p) const noexcept { rd_kafka_conf_destroy(p); }
};
struct TopicPartitionListDeleter {
    void operator()(rd_kafka_topic_partition_list_t* p) const noexcept {
        rd_kafka_topic_partition_list_destroy(p);
    }
};
struct MessageDeleter {
    void operator()(rd_kafka_message_t* p) const noexcept { rd_kafka_message_destroy(p); }
};
struct QueueDeleter {
    void operator()(rd_kafka_queue_t* p) const noexcept { rd_kafka_queue_destroy(p); }
};
struct KafkaErrorDeleter {
    void operator()(rd_kafka_error_t* p) const noexcept { rd_kafka_error_destroy(p); }
};
struct HeadersDeleter {
    void operator()(rd_kafka_headers_t* p) const noexcept { rd_kafka_headers_destroy(p); }
};
struct MetadataDeleter {
    void operator()(const rd_kafka_metadata_t* p) const noexcept { rd_kafka_metadata_destroy(p); }
};
struct AdminOptionsDeleter {
    void operator()(rd_kafka_AdminOptions_t* p) const noexcept { rd_kafka_AdminOptions_destroy(p); }
};
struct ConfigResourceDeleter {
    void operator()(rd_kafka_ConfigResource_t* p) const noexcept {
        rd_kafka_ConfigResource_destroy(p);
    }
};
struct NewTopicDeleter {
    void operator()(rd_kafka_NewTopic_t* p) const noexcept { rd_kafka_NewTopic_destroy(p); }
};
struct DeleteTopicDeleter {
    void operator()(rd_kafka_DeleteTopic_t* p) const noexcept { rd_kafka_DeleteTopic_destroy(p); }
};
struct EventDeleter {
    void operator()(rd_kafka_event_t* p) const noexcept { rd_kafka_event_destroy(p); }
};
struct MockClusterDeleter {
    void operator()(rd_kafka_mock_cluster_t* p) const noexcept { rd_kafka_mock_cluster_destroy(p); }
};

using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaHandleDeleter>;
using KafkaConf = std::unique_ptr<rd_kafka_conf_t, KafkaConfDeleter>;
using TopicPartitionList =
    std::unique_ptr<rd_kafka_topic_partition_list_t, TopicPartitionListDeleter>;
using MessageHandle = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;
using QueueHandle = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;
using KafkaErrorHandle = std::unique_ptr<rd_kafka_error_t, KafkaErrorDeleter>;
using HeadersHandle = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;
using MetadataHandle = std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>;
using AdminOptionsHandle = std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter>;
using ConfigResourceHandle = std::unique_ptr<rd_kafka_ConfigResource_t, ConfigResourceDeleter>;
using NewTopicHandle = std::unique_ptr<rd_kafka_NewTopic_t, NewTopicDeleter>;
using DeleteTopicHandle = std::unique_ptr<rd_kafka_DeleteTopic_t, DeleteTopicDeleter>;
using EventHandle = std::unique_ptr<rd_kafka_event_t, EventDeleter>;
using MockClusterHandle = std::unique_ptr<rd_kafka_mock_cluster_t, MockClusterDeleter>;

}  // namespace exo
