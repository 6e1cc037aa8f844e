// Rate limiting of repeated log lines: logging/repeat_limiter.hpp and RepeatLimitingSink
// (logging/log_sinks.hpp) with an injected clock. No servers.
#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "logging/log_sinks.hpp"
#include "logging/repeat_limiter.hpp"

using namespace exo;
using namespace std::chrono_literals;

namespace {

using TimePoint = RepeatLimiter::TimePoint;

const TimePoint kStart = TimePoint{} + 1000h;

// A RepeatLimitingSink in front of a ring buffer, with a clock the test moves.
struct LimitedLog {
    TimePoint now = kStart;
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> lines =
        std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
    std::shared_ptr<RepeatLimitingSink> sink = std::make_shared<RepeatLimitingSink>(
        lines, 10s, spdlog::level::warn, [this] { return now; });
    spdlog::logger logger{"worker-0", sink};

    LimitedLog() {
        lines->set_pattern("%l %v");
        logger.set_level(spdlog::level::trace);
    }
    std::vector<std::string> printed() const { return lines->last_formatted(); }
};

}  // namespace

TEST_SUITE("repeated log lines") {
    TEST_CASE(
        "the first line prints, repeats inside the interval are counted, the next one says how "
        "many") {
        RepeatLimiter limiter(10s);
        const auto key = RepeatLimiter::key_of("w", 4, "boom");
        CHECK(limiter.admit(key, {"w", 4, "boom"}, kStart).print);
        for (int i = 1; i <= 5; ++i)
            CHECK_FALSE(limiter.admit(key, {"w", 4, "boom"}, kStart + i * 1s).print);
        const auto later = limiter.admit(key, {"w", 4, "boom"}, kStart + 12s);
        CHECK(later.print);
        CHECK(later.suppressed == 5);
        CHECK(later.over == 12s);
        // A new window started with that line.
        CHECK_FALSE(limiter.admit(key, {"w", 4, "boom"}, kStart + 13s).print);
    }

    TEST_CASE(
        "lines that differ only in their numbers count as one; other text, level or logger does "
        "not") {
        CHECK(RepeatLimiter::key_of("w", 4, "retrying in 120 ms (attempt 3)") ==
              RepeatLimiter::key_of("w", 4, "retrying in 25 ms (attempt 14)"));
        CHECK(RepeatLimiter::key_of("w", 4, "a") != RepeatLimiter::key_of("w", 4, "b"));
        CHECK(RepeatLimiter::key_of("w", 4, "a") != RepeatLimiter::key_of("w", 3, "a"));
        CHECK(RepeatLimiter::key_of("w", 4, "a") != RepeatLimiter::key_of("v", 4, "a"));
    }

    TEST_CASE("a window that ends with suppressed lines and no later line still reports them") {
        RepeatLimiter limiter(10s);
        const auto key = RepeatLimiter::key_of("w", 4, "boom");
        limiter.admit(key, {"w", 4, "boom 1"}, kStart);
        limiter.admit(key, {"w", 4, "boom 2"}, kStart + 1s);
        limiter.admit(key, {"w", 4, "boom 3"}, kStart + 2s);
        CHECK(limiter.expired(kStart + 9s).empty());
        const auto summaries = limiter.expired(kStart + 10s);
        REQUIRE(summaries.size() == 1);
        CHECK(summaries[0].suppressed == 2);
        CHECK(summaries[0].last.text == "boom 3");
        CHECK(limiter.expired(kStart + 30s).empty());  // reported once, then forgotten
        CHECK(limiter.admit(key, {"w", 4, "boom"}, kStart + 31s).print);
    }

    TEST_CASE("drain reports counts of windows that have not ended") {
        RepeatLimiter limiter(10s);
        const auto key = RepeatLimiter::key_of("w", 4, "boom");
        limiter.admit(key, {"w", 4, "boom"}, kStart);
        limiter.admit(key, {"w", 4, "boom"}, kStart + 1s);
        const auto summaries = limiter.drain(kStart + 2s);
        REQUIRE(summaries.size() == 1);
        CHECK(summaries[0].suppressed == 1);
        CHECK(repeated_suffix(1, 1500ms) == " (repeated 1 time in the last 2 s)");
        CHECK(repeated_suffix(37, 10s) == " (repeated 37 times in the last 10 s)");
    }

    TEST_CASE("a thousand identical errors in a second print once, and the count follows") {
        LimitedLog log;
        for (int i = 0; i < 1000; ++i) log.logger.error("Redis unreachable: connection refused");
        CHECK(log.printed() ==
              std::vector<std::string>{"error Redis unreachable: connection refused\n"});
        log.now += 11s;
        log.logger.error("Redis unreachable: connection refused");
        REQUIRE(log.printed().size() == 2);
        CHECK(
            log.printed()[1] ==
            "error Redis unreachable: connection refused (repeated 999 times in the last 11 s)\n");
    }

    TEST_CASE(
        "suppressed lines are summarised on flush once their window ends, and on destruction") {
        LimitedLog log;
        log.logger.warn("retrying in {} ms", 100);
        log.logger.warn("retrying in {} ms", 200);
        log.logger.warn("retrying in {} ms", 400);
        log.logger.flush();
        CHECK(log.printed().size() == 1);
        log.now += 10s;
        log.logger.flush();
        REQUIRE(log.printed().size() == 2);
        CHECK(log.printed()[1] ==
              "warning retrying in 400 ms (repeated 2 times in the last 10 s)\n");

        log.logger.warn("retrying in {} ms", 800);  // counted in the window the summary opened
        const auto lines = log.lines;
        log.now += 1s;
        log.sink.reset();
        { spdlog::logger gone = std::move(log.logger); }
        REQUIRE(lines->last_formatted().size() == 3);
        CHECK(lines->last_formatted()[2] ==
              "warning retrying in 800 ms (repeated 1 time in the last 1 s)\n");
    }

    TEST_CASE("info and debug lines are never limited, and other lines are not held back") {
        LimitedLog log;
        for (int i = 0; i < 5; ++i) log.logger.info("partition assigned");
        log.logger.error("boom");
        log.logger.error("boom");
        log.logger.error("other");
        const auto printed = log.printed();
        REQUIRE(printed.size() == 7);
        CHECK(printed[5] == "error boom\n");
        CHECK(printed[6] == "error other\n");
    }
}
