#include "kafka/kafka_logging.hpp"

#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>

namespace exo {

std::shared_ptr<spdlog::logger> kafka_logger() {
    if (auto existing = spdlog::get("kafka")) return existing;
    // Two librdkafka threads may log their first line at once: only one registers.
    static std::mutex creating;
    std::lock_guard lock(creating);
    if (auto existing = spdlog::get("kafka")) return existing;
    auto logger = spdlog::default_logger()->clone("kafka");
    spdlog::register_logger(logger);
    return logger;
}

namespace {

void log_to_spdlog(const rd_kafka_t* rk, int level, const char* facility,
                   const char* line) noexcept {
    try {
        // librdkafka may log through a conf without a handle (rk null).
        const char* client = rk != nullptr ? rd_kafka_name(rk) : "rdkafka";
        kafka_logger()->log(kafka_log_level(level), "{} [{}] {}", facility ? facility : "?", client,
                            line ? line : "");
    } catch (...) {
        // Nothing to do: throwing into librdkafka's threads would terminate the process.
    }
}

}  // namespace

spdlog::level::level_enum kafka_log_level(int syslog_level) noexcept {
    if (syslog_level <= 2) return spdlog::level::critical;  // LOG_EMERG, LOG_ALERT, LOG_CRIT
    if (syslog_level == 3) return spdlog::level::err;       // LOG_ERR
    if (syslog_level == 4) return spdlog::level::warn;      // LOG_WARNING
    if (syslog_level <= 6) return spdlog::level::info;      // LOG_NOTICE, LOG_INFO
    return spdlog::level::debug;                            // LOG_DEBUG
}

void route_kafka_logs(rd_kafka_conf_t* conf) noexcept {
    rd_kafka_conf_set_log_cb(conf, &log_to_spdlog);
}

}  // namespace exo
