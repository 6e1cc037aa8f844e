#pragma once
// Logging, set up in one place for every command once its config is read:
// logging.level, logging.format, the configuration's secrets redacted from every
// line, and repeated warnings and errors rate-limited (logging/log_sinks.hpp).
#include <chrono>

#include "config/config.hpp"
#include "core/secrets.hpp"

namespace exo {

// How often one repeated warning or error line may print.
inline constexpr std::chrono::seconds kRepeatedLineInterval{10};

// Replaces spdlog's default logger with one writing to stdout through the chain
// of logging/log_sinks.hpp, and gives loggers cloned before (the "kafka" and
// worker loggers) the same sinks and level. Loggers cloned later from the
// default logger inherit them. Call before any thread logs: it swaps the sinks
// of existing loggers without a lock.
void configure_logging(const LoggingConfig& config, Redactor redactor);

}  // namespace exo
