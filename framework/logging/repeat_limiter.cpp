#include "logging/repeat_limiter.hpp"

namespace exo {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

RepeatLimiter::Verdict RepeatLimiter::admit(const std::string& key, Line line, TimePoint now) {
    auto [it, added] = windows_.try_emplace(key, Window{now, 0, {}});
    if (added) return {};
    Window& window = it->second;
    if (now - window.start < interval_) {
        ++window.suppressed;
        window.last = std::move(line);
        return {false, 0, {}};
    }
    const Verdict verdict{true, window.suppressed, duration_cast<milliseconds>(now - window.start)};
    window = Window{now, 0, {}};
    return verdict;
}

std::vector<RepeatLimiter::Summary> RepeatLimiter::expired(TimePoint now) {
    std::vector<Summary> out;
    for (auto it = windows_.begin(); it != windows_.end();) {
        Window& window = it->second;
        if (now - window.start < interval_) {
            ++it;
        } else if (window.suppressed == 0) {
            it = windows_.erase(it);
        } else {
            out.push_back({std::move(window.last), window.suppressed,
                           duration_cast<milliseconds>(now - window.start)});
            window = Window{now, 0, {}};
            ++it;
        }
    }
    return out;
}

std::vector<RepeatLimiter::Summary> RepeatLimiter::drain(TimePoint now) {
    std::vector<Summary> out;
    for (auto& [key, window] : windows_) {
        if (window.suppressed > 0)
            out.push_back({std::move(window.last), window.suppressed,
                           duration_cast<milliseconds>(now - window.start)});
    }
    windows_.clear();
    return out;
}

std::string RepeatLimiter::key_of(std::string_view logger, int level, std::string_view text) {
    std::string key(logger);
    key += '\x1f';
    key += std::to_string(level);
    key += '\x1f';
    bool in_number = false;
    for (const char c : text) {
        const bool digit = c >= '0' && c <= '9';
        if (digit && !in_number) key += '#';
        if (!digit) key += c;
        in_number = digit;
    }
    return key;
}

std::string repeated_suffix(std::uint64_t suppressed, milliseconds over) {
    // Rounded up: "in the last 0 s" would read as if nothing had happened.
    const long long seconds = (over.count() + 999) / 1000;
    return " (repeated " + std::to_string(suppressed) + (suppressed == 1 ? " time" : " times") +
           " in the last " + std::to_string(seconds) + " s)";
}

}  // namespace exo
