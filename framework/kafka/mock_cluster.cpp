#include "kafka/mock_cluster.hpp"

#include <cstdint>

#include "kafka/kafka_logging.hpp"

namespace exo {

MockCluster::MockCluster(int brokers) {
    if (brokers < 1)
        throw KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG,
                         "creating a mock Kafka cluster with " + std::to_string(brokers) +
                             " brokers (at least 1 is needed)",
                         false);
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    // The handle only hosts the cluster's threads; its own logs (no bootstrap
    // servers, idle connections) are noise, so only errors and worse are printed.
    set_kafka_property(conf.get(), "log_level", "3");
    char reason[512] = {0};
    handle_.reset(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), reason, sizeof reason));
    if (!handle_)
        throw KafkaError(
            RD_KAFKA_RESP_ERR__FAIL,
            std::string("creating the handle for a mock Kafka cluster (") + reason + ")", false);
    static_cast<void>(conf.release());  // rd_kafka_new took it

    cluster_.reset(rd_kafka_mock_cluster_new(handle_.get(), brokers));
    if (!cluster_)
        throw KafkaError(RD_KAFKA_RESP_ERR__FAIL,
                         "starting a mock Kafka cluster with " + std::to_string(brokers) +
                             " brokers (could it listen on loopback ports?)",
                         false);
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(cluster_.get());
}

MockCluster::~MockCluster() {
    // Explicit although member order does the same: the cluster must go before
    // the handle it lives in.
    cluster_.reset();
}

void MockCluster::create_topic(const std::string& name, int partitions, int replication_factor) {
    throw_if_kafka_error(
        rd_kafka_mock_topic_create(cluster_.get(), name.c_str(), partitions, replication_factor),
        "creating topic '" + name + "' with " + std::to_string(partitions) +
            " partitions on the mock cluster");
}

void MockCluster::set_broker_down(int broker_id) {
    throw_if_kafka_error(rd_kafka_mock_broker_set_down(cluster_.get(), broker_id),
                         "taking mock broker " + std::to_string(broker_id) + " down");
}

void MockCluster::set_broker_up(int broker_id) {
    throw_if_kafka_error(rd_kafka_mock_broker_set_up(cluster_.get(), broker_id),
                         "bringing mock broker " + std::to_string(broker_id) + " up");
}

void MockCluster::push_request_errors(int api_key, int count, rd_kafka_resp_err_t error) {
    if (count <= 0) return;
    const std::vector<rd_kafka_resp_err_t> errors(static_cast<std::size_t>(count), error);
    rd_kafka_mock_push_request_errors_array(cluster_.get(), static_cast<std::int16_t>(api_key),
                                            errors.size(), errors.data());
}

void MockCluster::clear_request_errors(int api_key) {
    rd_kafka_mock_clear_request_errors(cluster_.get(), static_cast<std::int16_t>(api_key));
}

}  // namespace exo
