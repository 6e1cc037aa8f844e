#include "pipeline/read_again.hpp"

#include <algorithm>

namespace exo {

ReadAgain::Fetched ReadAgain::fetched(const TopicPartition& tp, Offset offset,
                                      Clock::time_point now) {
    auto& state = partitions_[tp];
    const auto o = offset.value;
    if (state.window) {
        auto& w = *state.window;
        if (o >= w.from && o < w.end) {
            w.last_seen = now;
            if (o == w.end - 1) state.window.reset();  // read up to where it had been
            return Fetched::reread;
        }
        // Past the window: fresh. The window stays open until its last record
        // came again (or it goes stale): a record fetched before the rewind may
        // still arrive after it, and must not end the re-reads early.
    }
    state.next_fresh = std::max(state.next_fresh.value_or(o + 1), o + 1);
    return Fetched::fresh;
}

bool ReadAgain::open(const TopicPartition& tp, Offset from, Clock::time_point now) {
    auto& state = partitions_[tp];
    if (state.window && now - state.window->last_seen < kStale) return false;
    if (!state.next_fresh || *state.next_fresh <= from.value) return false;
    state.window = Window{from.value, *state.next_fresh, now};
    return true;
}

bool ReadAgain::reading_again(const TopicPartition& tp) const {
    auto it = partitions_.find(tp);
    return it != partitions_.end() && it->second.window.has_value();
}

}  // namespace exo
