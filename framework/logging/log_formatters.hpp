#pragma once
// The two line formats of logging.format (config.hpp LogFormat), as spdlog
// formatters. Both add the calling thread's LogContext (core/log_context.hpp).
//
// Thread-safety: spdlog calls a sink's formatter under the sink's lock; the
// formatters keep no state between lines.
#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

namespace exo {

// One JSON object per line:
//   {"time":"2026-11-23T13:44:56.123Z","level":"warn","logger":"worker-0",
//    "message":"...","topic":"payments","partition":3,"offset":42,"key":"k",
//    "trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}
// time is RFC 3339 in UTC with milliseconds; level is one of logging.level's
// names; logger is "exo" for the default logger; topic, partition and offset
// appear while a LogContext is in force, key when it has one, trace_id and
// span_id when it has a trace (exo/trace.hpp: the W3C ids). Strings are
// valid JSON whatever the bytes: escaped by core/text.hpp one_line_text (invalid
// UTF-8 and NUL become U+FFFD; backslashes, control characters and bidirectional
// overrides escaped), then their quotes, so a line never breaks in two.
class JsonLogFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
    std::unique_ptr<spdlog::formatter> clone() const override;
};

// spdlog's default line ("[2026-11-23 13:44:56.123] [worker-0] [warning] ...")
// followed, while a LogContext is in force, by " [payments[3]@42 key=k]", and with
// a trace " [payments[3]@42 key=k trace=4bf92f3577b34da6a3ce929d0e0e4736
// span=00f067aa0ba902b7]". The message, the topic and the key are escaped by
// core/text.hpp one_line_text: a message carries record keys and exception texts,
// and a newline or terminal escape in one must not forge a line or recolour a
// terminal; a multi-line message (a libpq error) becomes one line with "\n" in it.
class TextLogFormatter final : public spdlog::formatter {
public:
    TextLogFormatter();
    ~TextLogFormatter() override;
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
    std::unique_ptr<spdlog::formatter> clone() const override;

private:
    std::unique_ptr<spdlog::formatter> pattern_;  // spdlog's pattern_formatter
};
std::unique_ptr<spdlog::formatter> text_log_formatter();

// `text` as a JSON string literal, quotes included (exposed for tests).
std::string json_string(std::string_view text);

}  // namespace exo
