// librdkafka's log lines through spdlog: kafka/kafka_logging.hpp. No servers: a producer
// handle is created (it connects to nothing) only to make librdkafka log a CONFWARN.
#include <doctest/doctest.h>
#include <librdkafka/rdkafka.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "kafka/kafka_logging.hpp"
#include "kafka/rdkafka_handles.hpp"

using namespace exo;
namespace level = spdlog::level;

TEST_SUITE("Kafka logging") {
    TEST_CASE("librdkafka's syslog levels map to the spdlog level of the same severity") {
        CHECK(kafka_log_level(0) == level::critical);  // emergency
        CHECK(kafka_log_level(1) == level::critical);  // alert
        CHECK(kafka_log_level(2) == level::critical);  // critical
        CHECK(kafka_log_level(3) == level::err);
        CHECK(kafka_log_level(4) == level::warn);
        CHECK(kafka_log_level(5) == level::info);  // notice
        CHECK(kafka_log_level(6) == level::info);
        CHECK(kafka_log_level(7) == level::debug);
    }

    TEST_CASE("a level outside syslog's range still maps to a level") {
        CHECK(kafka_log_level(-1) == level::critical);
        CHECK(kafka_log_level(8) == level::debug);
    }

    TEST_CASE("a configuration warning of librdkafka reaches the kafka logger as a warning") {
        // A "kafka" logger of the test's own, in place of the one cloned on first use.
        auto lines = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
        auto previous = spdlog::get("kafka");
        spdlog::drop("kafka");
        auto logger = std::make_shared<spdlog::logger>("kafka", lines);
        logger->set_level(level::trace);
        spdlog::register_logger(logger);

        {
            KafkaConf conf(rd_kafka_conf_new());
            route_kafka_logs(conf.get());
            char reason[512] = {0};
            // A consumer property on a producer: librdkafka warns that it is ignored.
            REQUIRE(rd_kafka_conf_set(conf.get(), "group.id", "g", reason, sizeof reason) ==
                    RD_KAFKA_CONF_OK);
            KafkaHandle rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), reason, sizeof reason));
            REQUIRE_MESSAGE(rk, reason);
            static_cast<void>(conf.release());  // rd_kafka_new took it
        }

        spdlog::drop("kafka");
        if (previous) spdlog::register_logger(previous);

        bool warned = false;
        for (const auto& raw : lines->last_raw()) {
            const std::string text(raw.payload.data(), raw.payload.size());
            if (raw.level == level::warn && text.find("CONFWARN") != std::string::npos &&
                text.find("group.id") != std::string::npos)
                warned = true;
        }
        CHECK(warned);
    }
}
