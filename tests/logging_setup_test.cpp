// Logging set up from the config in one place: app/logging_setup.hpp. No servers. The test
// puts the test binary's own default logger (the captured one) back when it is done.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "app/logging_setup.hpp"
#include "logging/log_sinks.hpp"

using namespace exo;

TEST_SUITE("logging setup") {
    TEST_CASE(
        "a logger made before the setup, such as kafka, writes through the new sinks and level") {
        const auto previous = spdlog::default_logger();
        const auto previous_kafka = spdlog::get("kafka");
        spdlog::drop("kafka");
        auto early = previous->clone("kafka");
        spdlog::register_logger(early);

        configure_logging({.level = "debug", .format = LogFormat::json}, Redactor({"s3cret"}));
        const auto configured = spdlog::default_logger();
        CHECK(configured != previous);
        CHECK(configured->level() == spdlog::level::debug);
        REQUIRE(configured->sinks().size() == 1);
        // The chain starts with redaction, so nothing behind it sees a secret.
        CHECK(std::dynamic_pointer_cast<RedactingSink>(configured->sinks().front()) != nullptr);
        CHECK(early->sinks() == configured->sinks());
        CHECK(early->level() == spdlog::level::debug);

        spdlog::drop("kafka");
        spdlog::set_default_logger(previous);
        if (previous_kafka) spdlog::register_logger(previous_kafka);
    }
}
