#include "app/logging_setup.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "logging/log_formatters.hpp"
#include "logging/log_sinks.hpp"

namespace exo {

void configure_logging(const LoggingConfig& config, Redactor redactor) {
    // stdout, as spdlog's own default: the color sink colours the level only on a
    // terminal, and the JSON formatter marks no colour range.
    auto out = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
    if (config.format == LogFormat::json)
        out->set_formatter(std::make_unique<JsonLogFormatter>());
    else
        out->set_formatter(text_log_formatter());
    auto limited = std::make_shared<RepeatLimitingSink>(out, kRepeatedLineInterval);
    auto first = std::make_shared<RedactingSink>(limited, std::move(redactor));

    const auto level = spdlog::level::from_str(config.level);
    auto logger = std::make_shared<spdlog::logger>("", first);
    logger->set_level(level);
    spdlog::set_default_logger(logger);
    // The other loggers already registered (librdkafka's `kafka`) get the same sinks. Not the
    // new default: the signal watcher's thread may log through it from here on, and
    // reassigning its sinks would race with that (logger::sinks() is not synchronised).
    spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& existing) {
        if (existing == logger) return;
        existing->sinks() = {first};
        existing->set_level(level);
    });
    // Writes the summaries of repeated lines whose window ended while nothing
    // else was logged.
    spdlog::flush_every(std::chrono::seconds(1));
}

}  // namespace exo
