#include "scheduling/read_again.hpp"

#include <algorithm>

namespace exo {

ReadAgain::Classified ReadAgain::fetched(const TopicPartition& tp, Offset offset,
                                         Clock::time_point now) {
    auto& state = partitions_[tp];
    const auto o = offset.value;
    Classified out;
    if (state.window) {
        auto& w = *state.window;
        if (o >= w.from && o < w.end) {
            w.last_seen = now;
            w.reread_seen = true;
            out.kind = Fetched::reread;
            out.window = w.id;
            if (o == w.end - 1) {  // read up to where it had been
                out.closed_window_end = Offset{w.end};
                out.closed_window = w.id;
                state.window.reset();
            }
            return out;
        }
        // Past the window after one of its re-reads: the fetch passed it. Before
        // any re-read, a record past the end may have been fetched before the
        // rewind, and says nothing.
        if (o >= w.end && w.reread_seen) {
            out.closed_window_end = Offset{w.end};
            out.closed_window = w.id;
            state.window.reset();
        }
    }
    state.next_fresh = std::max(state.next_fresh.value_or(o + 1), o + 1);
    return out;
}

bool ReadAgain::open(const TopicPartition& tp, Offset from, Clock::time_point now) {
    auto& state = partitions_[tp];
    if (state.window && now - state.window->last_seen < kStale) return false;
    if (!state.next_fresh || *state.next_fresh <= from.value) return false;
    state.window = Window{next_window_++, from.value, *state.next_fresh, now};
    return true;
}

bool ReadAgain::reading_again(const TopicPartition& tp) const {
    auto it = partitions_.find(tp);
    return it != partitions_.end() && it->second.window.has_value();
}

}  // namespace exo
