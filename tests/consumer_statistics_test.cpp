#include <doctest/doctest.h>

#include <stdexcept>

#include "kafka/consumer_statistics.hpp"

using exo::Partition;
using exo::Topic;
using exo::TopicPartition;

// Trimmed from a real librdkafka 2.0 statistics object (STATISTICS.md).
constexpr const char* kSample = R"({
  "name": "rdkafka#consumer-1", "type": "consumer",
  "brokers": {
    "127.0.0.1:9092/1": {"name": "127.0.0.1:9092/1", "nodeid": 1, "source": "configured", "state": "UP"},
    "127.0.0.1:9093/2": {"name": "127.0.0.1:9093/2", "nodeid": 2, "source": "learned", "state": "DOWN"},
    "GroupCoordinator": {"name": "GroupCoordinator", "nodeid": -1, "source": "internal", "state": "UP"}
  },
  "topics": {
    "payments": {"topic": "payments", "partitions": {
      "0": {"partition": 0, "consumer_lag": 42, "hi_offset": 100},
      "1": {"partition": 1, "consumer_lag": -1},
      "-1": {"partition": -1, "consumer_lag": -1}
    }},
    "orders": {"topic": "orders", "partitions": {"3": {"partition": 3, "consumer_lag": 0}}}
  }
})";

TEST_CASE("consumer lag is read per partition, unknown lags and the placeholder left out") {
    auto s = exo::parse_consumer_statistics(kSample);
    CHECK(s.lag.size() == 2);
    CHECK(s.lag.at(TopicPartition{Topic{"payments"}, Partition{0}}) == 42);
    CHECK(s.lag.at(TopicPartition{Topic{"orders"}, Partition{3}}) == 0);
    CHECK(s.lag.count(TopicPartition{Topic{"payments"}, Partition{1}}) == 0);
}

TEST_CASE("broker connections are counted without librdkafka's internal broker") {
    auto s = exo::parse_consumer_statistics(kSample);
    CHECK(s.brokers == 2);
    CHECK(s.brokers_up == 1);
}

TEST_CASE("statistics without topics or brokers read as empty; non-objects are refused") {
    auto s = exo::parse_consumer_statistics(R"({"name":"c"})");
    CHECK(s.lag.empty());
    CHECK(s.brokers == 0);
    CHECK_THROWS_AS(exo::parse_consumer_statistics("not json"), std::invalid_argument);
    CHECK_THROWS_AS(exo::parse_consumer_statistics("[1,2]"), std::invalid_argument);
}
