#include "logging/log_formatters.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/pattern_formatter.h>

#include <chrono>
#include <ctime>

#include "core/log_context.hpp"
#include "core/text.hpp"

namespace exo {
namespace {

// `text` (one_line_text's output) with its quotes escaped: a JSON string's body.
std::string json_quoted(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '"') out += '\\';
        out += c;
    }
    return out;
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
        std::string text = " [" + one_line_text(context->topic()) + "[" +
                           std::to_string(context->partition()) + "]@" +
                           std::to_string(context->offset());
        if (context->key()) text += " key=" + one_line_text(*context->key());
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
    return "\"" + json_quoted(one_line_text(text)) + "\"";
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

std::unique_ptr<spdlog::formatter> TextLogFormatter::clone() const {
    return std::make_unique<TextLogFormatter>();
}

TextLogFormatter::TextLogFormatter() {
    auto pattern = std::make_unique<spdlog::pattern_formatter>();
    // %+ is spdlog's default line; '*' adds the record context after the message.
    pattern->add_flag<ContextFlag>('*').set_pattern("%+%*");
    pattern_ = std::move(pattern);
}

TextLogFormatter::~TextLogFormatter() = default;

void TextLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    const std::string escaped = one_line_text(text);
    if (escaped == text) {
        pattern_->format(msg, dest);
        return;
    }
    spdlog::details::log_msg copy(msg);
    copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    pattern_->format(copy, dest);
    // The colour sink colours the range the level flag marked on the message it passed.
    msg.color_range_start = copy.color_range_start;
    msg.color_range_end = copy.color_range_end;
}

std::unique_ptr<spdlog::formatter> text_log_formatter() {
    return std::make_unique<TextLogFormatter>();
}

}  // namespace exo
