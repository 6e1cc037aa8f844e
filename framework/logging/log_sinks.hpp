#pragma once
// Sink wrappers between exo's loggers and the sink that writes (stdout, with the
// formatter of logging.format). Each does one thing to a line and hands it on;
// the formatter is the inner sink's (set_pattern and set_formatter go to it).
//
//   logger -> RedactingSink -> RepeatLimitingSink -> stdout sink (text or JSON)
//
// Redaction comes first, so nothing after it (the limiter's memory of a
// suppressed line included) ever holds a secret.
//
// Thread-safety: log() and flush() may be called from any thread (spdlog
// loggers are shared by threads); each wrapper serialises what needs it.
#include <spdlog/sinks/sink.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "core/secrets.hpp"
#include "logging/repeat_limiter.hpp"

namespace exo {

// Masks the configuration's secrets in every line (core/secrets.hpp Redactor):
// the last line of defence for a message quoting one (a libpq error quoting
// the conninfo, a librdkafka property dump, an exception's text).
class RedactingSink final : public spdlog::sinks::sink {
public:
    RedactingSink(std::shared_ptr<spdlog::sinks::sink> inner, Redactor redactor);

    void log(const spdlog::details::log_msg& msg) override;
    void flush() override { inner_->flush(); }
    void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
    void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
        inner_->set_formatter(std::move(formatter));
    }

private:
    std::shared_ptr<spdlog::sinks::sink> inner_;
    const Redactor redactor_;  // immutable: no lock needed
};

// Lines at `from_level` and above go through a RepeatLimiter (see
// repeat_limiter.hpp for the rule); lower levels pass untouched: debug and trace
// are verbose on request, info lines are state changes worth each line. Why a
// sink and not a helper at the call sites: the flood that matters most comes
// from librdkafka's own threads (a broker down: "Connect to ... failed" per
// broker per retry) and from error paths spread over the pipeline; a sink
// catches every one of them, including lines written later, with one rule.
// Summaries of windows that ended are written on the next line of any key and
// on flush() (spdlog::flush_every calls it periodically), and every pending
// count on destruction, so a count is never dropped silently.
class RepeatLimitingSink final : public spdlog::sinks::sink {
public:
    using Clock = std::function<RepeatLimiter::TimePoint()>;

    RepeatLimitingSink(
        std::shared_ptr<spdlog::sinks::sink> inner, std::chrono::milliseconds interval,
        spdlog::level::level_enum from_level = spdlog::level::warn,
        Clock clock = [] { return std::chrono::steady_clock::now(); });
    ~RepeatLimitingSink() override;
    RepeatLimitingSink(const RepeatLimitingSink&) = delete;
    RepeatLimitingSink& operator=(const RepeatLimitingSink&) = delete;

    void log(const spdlog::details::log_msg& msg) override;
    void flush() override;
    void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
    void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
        inner_->set_formatter(std::move(formatter));
    }

private:
    // Callers hold mutex_.
    void write_summaries(const std::vector<RepeatLimiter::Summary>& summaries);

    std::shared_ptr<spdlog::sinks::sink> inner_;
    const spdlog::level::level_enum from_level_;
    const Clock clock_;
    std::mutex mutex_;
    RepeatLimiter limiter_;
};

}  // namespace exo
