#pragma once
// librdkafka's own log lines (CONFWARN, broker connection errors, ...) through spdlog, under
// a logger named "kafka", instead of librdkafka's default of printing to stderr: they get the
// application's format, level and sinks like every other line.
#include <librdkafka/rdkafka.h>
#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <memory>

namespace exo {

// The spdlog level of a librdkafka (syslog) level: 0-2 (emergency, alert, critical) critical,
// 3 error, 4 warning, 5-6 (notice, info) info, 7 debug; anything below 0 critical, above 7
// debug.
spdlog::level::level_enum kafka_log_level(int syslog_level) noexcept;

// Sets `conf`'s log callback to one that writes to the "kafka" logger: spdlog::get("kafka"),
// created and registered on first use as a clone of the default logger (so it has the
// default logger's sinks and level at that moment; spdlog::set_level applies to it later).
// Call before rd_kafka_new; what librdkafka logs still depends on the conf's `log_level`.
//
// Thread-safety: librdkafka calls the callback from its own threads; the callback is
// noexcept (a failure to log drops the line) and spdlog loggers are thread-safe.
void route_kafka_logs(rd_kafka_conf_t* conf) noexcept;

// The "kafka" logger itself (created as described above on first use).
std::shared_ptr<spdlog::logger> kafka_logger();

}  // namespace exo
