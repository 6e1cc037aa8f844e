// The text and JSON line formats and the record context: logging/log_formatters.hpp,
// core/log_context.hpp. No servers: lines are formatted into a buffer.
#include <doctest/doctest.h>
#include <spdlog/details/log_msg.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/log_context.hpp"
#include "logging/log_formatters.hpp"

using namespace exo;

namespace {

std::string format_with(spdlog::formatter& f, std::string_view logger, std::string_view text,
                        spdlog::level::level_enum level = spdlog::level::warn) {
    const spdlog::details::log_msg msg(spdlog::string_view_t(logger.data(), logger.size()), level,
                                       spdlog::string_view_t(text.data(), text.size()));
    spdlog::memory_buf_t out;
    f.format(msg, out);
    return std::string(out.data(), out.size());
}

nlohmann::json json_line(std::string_view logger, std::string_view text,
                         spdlog::level::level_enum level = spdlog::level::warn) {
    JsonLogFormatter f;
    const std::string line = format_with(f, logger, text, level);
    REQUIRE(line.ends_with("}\n"));
    REQUIRE(line.find('\n') == line.size() - 1);  // one line, whatever the text holds
    return nlohmann::json::parse(line);
}

}  // namespace

TEST_SUITE("log formats") {
    TEST_CASE(
        "a JSON line has time, level, logger and message and no record fields without a context") {
        const auto j = json_line("worker-0", "batch of 3 put back", spdlog::level::warn);
        CHECK(j["level"] == "warn");
        CHECK(j["logger"] == "worker-0");
        CHECK(j["message"] == "batch of 3 put back");
        const std::string time = j["time"];
        // 2026-11-23T13:44:56.123Z
        CHECK(time.size() == 24);
        CHECK(time[10] == 'T');
        CHECK(time[19] == '.');
        CHECK(time.back() == 'Z');
        CHECK_FALSE(j.contains("topic"));
        CHECK_FALSE(j.contains("key"));
        CHECK(json_line("", "x")["logger"] == "exo");
        CHECK(json_line("kafka", "x", spdlog::level::err)["level"] == "error");
        CHECK(json_line("kafka", "x", spdlog::level::critical)["level"] == "critical");
        CHECK(json_line("kafka", "x", spdlog::level::debug)["level"] == "debug");
    }

    TEST_CASE("quotes, backslashes and control characters survive a JSON round trip") {
        const std::string text = "say \"hi\" \\ tab\there\nnew line\r\x01\x1f end";
        CHECK(json_line("x", text)["message"] == text);
    }

    TEST_CASE("invalid UTF-8 and NUL become U+FFFD, so the line stays valid JSON") {
        const std::string text = std::string("bad \xff\xfe byte, nul ") + '\0' + " and \xc0\x80";
        const std::string message = json_line("x", text)["message"];
        CHECK(message.find("\xef\xbf\xbd") != std::string::npos);
        CHECK(message.find('\0') == std::string::npos);
        CHECK(message.starts_with("bad "));
        CHECK(json_line("x", "caf\xc3\xa9")["message"] == "caf\xc3\xa9");  // valid UTF-8 kept
    }

    TEST_CASE("a JSON line carries the record of the thread's LogContext while it lives") {
        {
            LogContext context(Topic{"payments"}, Partition{3}, Offset{42},
                               std::string_view("key \"1\"\n\xff"));
            const auto j = json_line("worker-1", "attempt 2 failed");
            CHECK(j["topic"] == "payments");
            CHECK(j["partition"] == 3);
            CHECK(j["offset"] == 42);
            const std::string key = j["key"];
            CHECK(key.starts_with("key \"1\"\n"));
            CHECK(key.ends_with("\xef\xbf\xbd"));
            {
                LogContext inner(Topic{"audit"}, Partition{0}, Offset{7});
                const auto nested = json_line("worker-1", "x");
                CHECK(nested["topic"] == "audit");
                CHECK_FALSE(nested.contains("key"));
            }
            CHECK(json_line("worker-1", "x")["topic"] == "payments");
            // Another thread has no context.
            nlohmann::json other;
            std::thread([&] {
                JsonLogFormatter f;
                other = nlohmann::json::parse(format_with(f, "w", "x"));
            }).join();
            CHECK_FALSE(other.contains("topic"));
            {
                NoLogContext hidden;
                CHECK_FALSE(json_line("w", "x").contains("topic"));
            }
            CHECK(json_line("w", "x").contains("topic"));
        }
        CHECK(LogContext::current() == nullptr);
        CHECK_FALSE(json_line("worker-1", "x").contains("topic"));
    }

    TEST_CASE("a text line ends with the record context, its key escaped onto one line") {
        auto f = text_log_formatter();
        const std::string plain = format_with(*f, "worker-0", "hello");
        CHECK(plain.find("[worker-0]") != std::string::npos);
        CHECK(plain.ends_with("hello\n"));
        LogContext context(Topic{"payments"}, Partition{3}, Offset{42}, std::string_view("k\n1"));
        const std::string line = format_with(*f, "worker-0", "hello");
        CHECK_MESSAGE(line.ends_with("hello [payments[3]@42 key=k\\n1]\n"), line);
    }

    TEST_CASE(
        "a text line's message is escaped onto one line: a key with a newline or ESC in it forges "
        "no line and drives no terminal") {
        auto f = text_log_formatter();
        const std::string forged =
            "attempt 1 failed for key k\n[2026-01-01 00:00:00.000] [exo] [info] all good "
            "\x1b[2J";
        const std::string line = format_with(*f, "worker-0", forged);
        CHECK_MESSAGE(line.find('\n') == line.size() - 1, line);
        CHECK(line.find('\x1b') == std::string::npos);
        CHECK(line.find("key k\\n[2026-01-01") != std::string::npos);
        CHECK(line.find("\\u001b[2J") != std::string::npos);
        // The level's colour range is still marked on the caller's message (the
        // colour sink reads it there), and where it is for an unescaped line.
        const std::string text = "k\n1";
        const spdlog::details::log_msg msg("w", spdlog::level::warn,
                                           spdlog::string_view_t(text.data(), text.size()));
        spdlog::memory_buf_t out;
        f->format(msg, out);
        const spdlog::details::log_msg plain("w", spdlog::level::warn, "k");
        spdlog::memory_buf_t plain_out;
        f->format(plain, plain_out);
        CHECK(msg.color_range_end > msg.color_range_start);
        CHECK(msg.color_range_start == plain.color_range_start);
        CHECK(msg.color_range_end == plain.color_range_end);
    }

    TEST_CASE("a record's log lines name its trace id and span id, in both formats") {
        TraceContext trace;
        trace.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
        trace.span_id = "00f067aa0ba902b7";
        LogContext context(Topic{"payments"}, Partition{3}, Offset{42}, std::string_view("k"),
                           &trace);
        const auto j = json_line("worker-0", "hello");
        CHECK(j["trace_id"] == trace.trace_id);
        CHECK(j["span_id"] == trace.span_id);
        auto f = text_log_formatter();
        const std::string line = format_with(*f, "worker-0", "hello");
        CHECK_MESSAGE(
            line.ends_with("hello [payments[3]@42 key=k trace=4bf92f3577b34da6a3ce929d0e0e4736 "
                           "span=00f067aa0ba902b7]\n"),
            line);
        {
            LogContext untraced(Topic{"audit"}, Partition{0}, Offset{7});
            CHECK_FALSE(json_line("w", "x").contains("trace_id"));
        }
    }

    TEST_CASE("json_string escapes what JSON requires") {
        CHECK(json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
        CHECK(json_string(std::string_view("\x01", 1)) == "\"\\u0001\"");
        CHECK(nlohmann::json::parse(json_string("\x7f\x1b[31m")) == "\x7f\x1b[31m");
        // A bidirectional override is escaped too, and still reads back as itself.
        CHECK(json_string("a\xE2\x80\xAE"
                          "b") == "\"a\\u202eb\"");
        CHECK(nlohmann::json::parse(json_string("a\xE2\x80\xAE"
                                                "b")) ==
              "a\xE2\x80\xAE"
              "b");
    }
}
