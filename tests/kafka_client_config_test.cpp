// KafkaConsumer and KafkaProducer refuse a property before they reach a broker: what
// librdkafka rejects, and what exo owns itself. No server: the address is never dialled.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "kafka/consumer.hpp"
#include "kafka/kafka_error.hpp"
#include "kafka/producer.hpp"

namespace {

struct IgnoreRebalances : exo::RebalanceListener {
    void on_assigned(const std::vector<exo::TopicPartition>&) override {}
    void on_revoked(const std::vector<exo::TopicPartition>&, bool) override {}
};

void make_consumer(const std::string& name, const std::string& value) {
    IgnoreRebalances listener;
    exo::KafkaConsumer consumer({"127.0.0.1:1", "g", {"t"}, {{name, value}}}, listener);
}

void make_producer(const std::string& name, const std::string& value) {
    exo::KafkaProducer producer(exo::ProducerOptions{"127.0.0.1:1", {{name, value}}});
}

}  // namespace

TEST_SUITE("kafka client config") {
    TEST_CASE("a property librdkafka rejects is reported as a KafkaConfigError naming it") {
        CHECK_THROWS_WITH_AS(make_consumer("no.such.property", "1"),
                             doctest::Contains("no.such.property"), exo::KafkaConfigError);
        CHECK_THROWS_WITH_AS(make_consumer("session.timeout.ms", "soon"),
                             doctest::Contains("session.timeout.ms"), exo::KafkaConfigError);
        CHECK_THROWS_WITH_AS(make_producer("compression.codec", "zip"),
                             doctest::Contains("compression.codec"), exo::KafkaConfigError);
    }

    TEST_CASE("properties exo manages itself cannot be overridden") {
        for (const char* name : {"enable.auto.commit", "enable.auto.offset.store", "group.id"}) {
            INFO(name);
            CHECK_THROWS_WITH_AS(make_consumer(name, "true"), doctest::Contains(name),
                                 exo::KafkaConfigError);
        }
        CHECK_THROWS_AS(make_producer("enable.idempotence", "false"), exo::KafkaConfigError);
    }
}
