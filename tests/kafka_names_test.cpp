// kafka/kafka_names.hpp: Kafka's naming rules and the consumer properties exo
// keeps for itself, shared by exo.yaml, `exo mock-kafka` and KafkaConsumer. Pure.
#include <doctest/doctest.h>

#include <string>

#include "kafka/kafka_names.hpp"

using exo::is_reserved_consumer_property;
using exo::kMaxTopicNameLength;
using exo::partition_count;
using exo::split_topic_spec;
using exo::topic_name_problem;

TEST_SUITE("kafka names") {
    TEST_CASE("letters, digits, dots, underscores and dashes make a legal topic name") {
        CHECK_FALSE(topic_name_problem("payments").has_value());
        CHECK_FALSE(topic_name_problem("Payments.v2_eu-west").has_value());
        CHECK_FALSE(topic_name_problem("payments.dlq").has_value());
        CHECK_FALSE(topic_name_problem("...").has_value());
    }

    TEST_CASE("a topic name may have 249 characters but not 250") {
        CHECK(kMaxTopicNameLength == 249);
        CHECK_FALSE(topic_name_problem(std::string(249, 'a')).has_value());
        CHECK(topic_name_problem(std::string(250, 'a')) ==
              "a topic name has at most 249 characters");
    }

    TEST_CASE("an empty name, '.', '..' and other characters are refused, each in its words") {
        CHECK(topic_name_problem("") == "a topic name must not be empty");
        CHECK(topic_name_problem(".") == "a topic name cannot be '.' or '..'");
        CHECK(topic_name_problem("..") == "a topic name cannot be '.' or '..'");
        CHECK(topic_name_problem("pay ments") ==
              "topic 'pay ments' has characters Kafka refuses; use letters, digits, '.', '_' and "
              "'-'");
        for (const char* name : {"a/b", "a:b", "caf\xC3\xA9", "a\tb", "a*"})
            CHECK(topic_name_problem(name).has_value());
    }

    TEST_CASE("a topic spec is split at its last colon") {
        const auto plain = split_topic_spec("payments");
        CHECK(plain.name == "payments");
        CHECK_FALSE(plain.partitions.has_value());

        const auto counted = split_topic_spec("payments:4");
        CHECK(counted.name == "payments");
        CHECK(counted.partitions == std::optional<std::string_view>("4"));

        const auto two = split_topic_spec("a:b:4");
        CHECK(two.name == "a:b");
        CHECK(two.partitions == std::optional<std::string_view>("4"));

        const auto empty = split_topic_spec(":");
        CHECK(empty.name.empty());
        CHECK(empty.partitions == std::optional<std::string_view>(""));
    }

    TEST_CASE("a partition count is a plain whole number of at least 1") {
        CHECK(partition_count("1") == 1);
        CHECK(partition_count("64") == 64);
        for (const char* bad :
             {"", "0", "-1", "+4", " 4", "4 ", "4x", "1.5", "four", "99999999999999999999"})
            CHECK_FALSE(partition_count(bad).has_value());
    }

    TEST_CASE("exo keeps the group id and both automatic offset settings for itself") {
        CHECK(is_reserved_consumer_property("group.id"));
        CHECK(is_reserved_consumer_property("enable.auto.commit"));
        CHECK(is_reserved_consumer_property("enable.auto.offset.store"));
        CHECK_FALSE(is_reserved_consumer_property("session.timeout.ms"));
        CHECK_FALSE(is_reserved_consumer_property("auto.offset.reset"));
        CHECK_FALSE(is_reserved_consumer_property("GROUP.ID"));
    }
}

TEST_CASE("a producer built from consumer properties leaves out the consumer-only ones") {
    CHECK(exo::is_consumer_only_property("session.timeout.ms"));
    CHECK(exo::is_consumer_only_property("fetch.wait.max.ms"));
    CHECK(exo::is_consumer_only_property("group.id"));
    CHECK_FALSE(exo::is_consumer_only_property("security.protocol"));
    CHECK_FALSE(exo::is_consumer_only_property("sasl.password"));
    CHECK_FALSE(exo::is_consumer_only_property("message.timeout.ms"));
}
