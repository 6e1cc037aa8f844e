#pragma once
// Which of many repeated log lines are printed: the decision alone, with the
// time passed in, so it is tested without a clock or a sink
// (logging/log_sinks.hpp RepeatLimitingSink applies it).
//
// Per key (a line's logger, level and text with its numbers blanked out):
//   - the first line prints at once and opens a window of `interval`;
//   - lines with the same key inside the window are counted, not printed;
//   - the first line after the window prints, saying how many were suppressed,
//     and opens a new window;
//   - a window that ends with suppressed lines and no line after it is
//     reported by expired() (the sink prints "<last text> (repeated N times in
//     the last 10 s)"), so a count is never lost because the error stopped.
// So a key prints at most one line per interval plus one summary, and every
// suppressed line is counted in some printed line.
//
// Thread-safety: none; the sink serialises calls.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace exo {

class RepeatLimiter {
public:
    using TimePoint = std::chrono::steady_clock::time_point;

    // A line as the limiter remembers the last suppressed one.
    struct Line {
        std::string logger;
        int level = 0;
        std::string text;
    };

    struct Verdict {
        bool print = true;
        std::uint64_t suppressed = 0;      // lines of this key not printed since its last one
        std::chrono::milliseconds over{};  // ... during this long
    };

    struct Summary {
        Line last;  // the last suppressed line
        std::uint64_t suppressed = 0;
        std::chrono::milliseconds over{};
    };

    explicit RepeatLimiter(std::chrono::milliseconds interval) : interval_(interval) {}

    // Whether a line with `key` prints now. `line` is kept if it is suppressed.
    Verdict admit(const std::string& key, Line line, TimePoint now);

    // The windows that ended by `now` with suppressed lines (each then opens a new
    // window, so a line right after its summary is counted again); windows that
    // ended without any are forgotten.
    std::vector<Summary> expired(TimePoint now);

    // Every window with suppressed lines, ended or not, and forgets all: at shutdown.
    std::vector<Summary> drain(TimePoint now);

    // The key of a line: digits blanked, so "retrying in 120 ms" and "retrying in
    // 250 ms" count as one line (a sink sees the formatted text, not the template).
    static std::string key_of(std::string_view logger, int level, std::string_view text);

    std::chrono::milliseconds interval() const { return interval_; }

private:
    struct Window {
        TimePoint start;
        std::uint64_t suppressed = 0;
        Line last;
    };

    std::chrono::milliseconds interval_;
    std::unordered_map<std::string, Window> windows_;
};

// " (repeated N times in the last S s)": what a printed line says of the lines
// suppressed before it.
std::string repeated_suffix(std::uint64_t suppressed, std::chrono::milliseconds over);

}  // namespace exo
