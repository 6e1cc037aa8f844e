#include "logging/log_formatters.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/pattern_formatter.h>

#include <chrono>
#include <ctime>
#include <limits>

#include "core/log_context.hpp"
#include "core/text.hpp"

namespace exo {
namespace {

constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

// Control characters as JSON escapes; `quote` also escapes '"' (JSON), the text
// format leaves it alone. Expects valid UTF-8 (printable_text's output).
void append_escaped(std::string& out, std::string_view text, bool quote) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const char c : text) {
        switch (c) {
            case '"':
                out += quote ? "\\\"" : "\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                    out += "\\u00";
                    out += kHex[(static_cast<unsigned char>(c) >> 4) & 0x0f];
                    out += kHex[static_cast<unsigned char>(c) & 0x0f];
                } else {
                    out += c;
                }
        }
    }
}

// logging.level's names, so a filter written for the config matches the output.
std::string_view level_name(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:
            return "trace";
        case spdlog::level::debug:
            return "debug";
        case spdlog::level::info:
            return "info";
        case spdlog::level::warn:
            return "warn";
        case spdlog::level::err:
            return "error";
        case spdlog::level::critical:
            return "critical";
        default:
            return "off";
    }
}

// 2026-11-23T13:44:56.123Z
std::string rfc3339_utc(spdlog::log_clock::time_point time) {
    using namespace std::chrono;
    const auto since_epoch = duration_cast<milliseconds>(time.time_since_epoch());
    const std::time_t seconds =
        static_cast<std::time_t>(floor<std::chrono::seconds>(since_epoch).count());
    const int ms = static_cast<int>(since_epoch.count() - static_cast<long long>(seconds) * 1000);
    std::tm tm{};
    ::gmtime_r(&seconds, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

void append(spdlog::memory_buf_t& dest, const std::string& text) {
    dest.append(text.data(), text.data() + text.size());
}

// The text format's " [topic[p]@offset key=k trace=... span=...]".
class ContextFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg&, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        const LogContext* context = LogContext::current();
        if (context == nullptr) return;
        std::string text = " [";
        append_escaped(text, printable_text(context->topic(), kUnlimited), false);
        text +=
            "[" + std::to_string(context->partition()) + "]@" + std::to_string(context->offset());
        if (context->key()) {
            text += " key=";
            append_escaped(text, printable_text(*context->key(), kUnlimited), false);
        }
        // Ids are hex made by exo or checked by parse_traceparent: nothing to escape.
        if (!context->trace_id().empty())
            text += " trace=" + context->trace_id() + " span=" + context->span_id();
        text += "]";
        append(dest, text);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<ContextFlag>();
    }
};

}  // namespace

std::string json_string(std::string_view text) {
    std::string out = "\"";
    append_escaped(out, printable_text(text, kUnlimited), true);
    return out + "\"";
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
    const std::string_view logger(msg.logger_name.data(), msg.logger_name.size());
    std::string line =
        "{\"time\":\"" + rfc3339_utc(msg.time) + "\",\"level\":\"" +
        std::string(level_name(msg.level)) +
        "\",\"logger\":" + json_string(logger.empty() ? "exo" : logger) +
        ",\"message\":" + json_string(std::string_view(msg.payload.data(), msg.payload.size()));
    if (const LogContext* context = LogContext::current()) {
        line += ",\"topic\":" + json_string(context->topic()) +
                ",\"partition\":" + std::to_string(context->partition()) +
                ",\"offset\":" + std::to_string(context->offset());
        if (context->key()) line += ",\"key\":" + json_string(*context->key());
        if (!context->trace_id().empty())
            line += ",\"trace_id\":" + json_string(context->trace_id()) +
                    ",\"span_id\":" + json_string(context->span_id());
    }
    line += "}\n";
    append(dest, line);
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
    return std::make_unique<JsonLogFormatter>();
}

std::unique_ptr<spdlog::formatter> text_log_formatter() {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    // %+ is spdlog's default line; '*' adds the record context after the message.
    formatter->add_flag<ContextFlag>('*').set_pattern("%+%*");
    return formatter;
}

}  // namespace exo
