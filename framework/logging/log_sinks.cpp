#include "logging/log_sinks.hpp"

#include <spdlog/details/log_msg.h>

#include <string>
#include <string_view>

#include "core/log_context.hpp"

namespace exo {
namespace {

std::string_view text_of(spdlog::string_view_t s) {
    return {s.data(), s.size()};
}

// `msg` with another text; everything else (time, logger, level, source) kept.
spdlog::details::log_msg with_text(const spdlog::details::log_msg& msg, const std::string& text) {
    spdlog::details::log_msg copy(msg);
    copy.payload = spdlog::string_view_t(text.data(), text.size());
    return copy;
}

}  // namespace

RedactingSink::RedactingSink(std::shared_ptr<spdlog::sinks::sink> inner, Redactor redactor)
    : inner_(std::move(inner)), redactor_(std::move(redactor)) {}

void RedactingSink::log(const spdlog::details::log_msg& msg) {
    const std::string_view text = text_of(msg.payload);
    if (!redactor_.finds_secret(text)) {
        inner_->log(msg);
        return;
    }
    const std::string redacted = redactor_.redact(text);
    inner_->log(with_text(msg, redacted));
}

RepeatLimitingSink::RepeatLimitingSink(std::shared_ptr<spdlog::sinks::sink> inner,
                                       std::chrono::milliseconds interval,
                                       spdlog::level::level_enum from_level, Clock clock)
    : inner_(std::move(inner)),
      from_level_(from_level),
      clock_(std::move(clock)),
      limiter_(interval) {}

RepeatLimitingSink::~RepeatLimitingSink() {
    try {
        std::lock_guard lock(mutex_);
        write_summaries(limiter_.drain(clock_()));
        inner_->flush();
    } catch (...) {
        // A destructor must not throw; the counts are lost only if writing fails.
    }
}

void RepeatLimitingSink::log(const spdlog::details::log_msg& msg) {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    if (msg.level >= from_level_) {
        const std::string_view logger = text_of(msg.logger_name);
        const std::string_view text = text_of(msg.payload);
        const auto verdict =
            limiter_.admit(RepeatLimiter::key_of(logger, msg.level, text),
                           {std::string(logger), msg.level, std::string(text)}, now);
        if (verdict.print && verdict.suppressed == 0) {
            inner_->log(msg);
        } else if (verdict.print) {
            inner_->log(with_text(
                msg, std::string(text) + repeated_suffix(verdict.suppressed, verdict.over)));
        }
    } else {
        inner_->log(msg);
    }
    write_summaries(limiter_.expired(now));
}

void RepeatLimitingSink::flush() {
    std::lock_guard lock(mutex_);
    write_summaries(limiter_.expired(clock_()));
    inner_->flush();
}

void RepeatLimitingSink::write_summaries(const std::vector<RepeatLimiter::Summary>& summaries) {
    if (summaries.empty()) return;
    // Not about the record the calling thread works on.
    NoLogContext no_context;
    for (const auto& s : summaries) {
        const std::string text = s.last.text + repeated_suffix(s.suppressed, s.over);
        inner_->log(spdlog::details::log_msg(
            spdlog::string_view_t(s.last.logger.data(), s.last.logger.size()),
            static_cast<spdlog::level::level_enum>(s.last.level),
            spdlog::string_view_t(text.data(), text.size())));
    }
}

}  // namespace exo
