#pragma once
// librdkafka's mock cluster (rdkafka_mock.h): a Kafka-protocol broker set on
// random loopback ports, served by threads inside this process. Used by the
// embedded default config, `exo mock-kafka`, the demo and the tests.
// Lifecycle: brokers listen from construction until destruction.
#include <string>
#include <vector>

#include "kafka/kafka_error.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {

class MockCluster {
public:
    // Throws KafkaError if the cluster cannot be created.
    explicit MockCluster(int brokers);
    MockCluster(const MockCluster&) = delete;
    MockCluster& operator=(const MockCluster&) = delete;
    ~MockCluster();

    // "127.0.0.1:port,127.0.0.1:port"
    const std::string& bootstrap_servers() const { return bootstraps_; }
    // Throws KafkaError on failure (e.g. the topic exists with another count).
    void create_topic(const std::string& name, int partitions, int replication_factor = 1);

    // Fault injection for tests.
    void set_broker_down(int broker_id);
    void set_broker_up(int broker_id);
    // The next `count` requests of `api_key` (RD_KAFKAP_*) fail with `error`.
    void push_request_errors(int api_key, int count, rd_kafka_resp_err_t error);
    // Drops the errors of `api_key` that were pushed and not yet used.
    void clear_request_errors(int api_key);

    rd_kafka_mock_cluster_t* raw() const { return cluster_.get(); }

private:
    // Destruction order: the cluster lives in handle_ (rd_kafka_mock_cluster_new
    // keeps a reference to it), so cluster_ is declared after handle_ and is
    // destroyed first.
    KafkaHandle handle_;  // the producer handle the mock cluster lives in
    MockClusterHandle cluster_;
    std::string bootstraps_;
};

}  // namespace exo
