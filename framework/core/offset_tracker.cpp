#include "core/offset_tracker.hpp"

namespace exo {

void PartitionOffsets::track(Offset offset) {
    if (committed_next_ && offset.value < *committed_next_) return;  // durable already
    if (!highest_tracked_ || offset.value > *highest_tracked_) highest_tracked_ = offset.value;
    unfinished_.insert(offset.value);
}

void PartitionOffsets::finish(Offset offset) {
    unfinished_.erase(offset.value);
}

std::optional<Offset> PartitionOffsets::committable() const {
    if (!highest_tracked_) return std::nullopt;
    std::int64_t next = unfinished_.empty() ? *highest_tracked_ + 1 : *unfinished_.begin();
    if (committed_next_ && next <= *committed_next_) return std::nullopt;
    return Offset{next};
}

std::optional<Offset> PartitionOffsets::committable_at(Offset position) const {
    if (!highest_tracked_ || !unfinished_.empty()) return std::nullopt;
    if (position.value <= *highest_tracked_ + 1) return std::nullopt;  // nothing past the records
    if (committed_next_ && position.value <= *committed_next_) return std::nullopt;
    return position;
}

void PartitionOffsets::mark_committed(Offset next) {
    if (!committed_next_ || next.value > *committed_next_) committed_next_ = next.value;
}

void OffsetTracker::finish(const TopicPartition& tp, Offset offset) {
    auto it = partitions_.find(tp);
    if (it != partitions_.end()) it->second.finish(offset);
}

std::vector<OffsetToCommit> OffsetTracker::committable(
    const std::vector<TopicPartition>* only) const {
    std::vector<OffsetToCommit> out;
    auto add = [&](const TopicPartition& tp, const PartitionOffsets& p) {
        if (auto next = p.committable()) out.push_back({tp, *next});
    };
    if (only == nullptr) {
        for (const auto& [tp, p] : partitions_) add(tp, p);
    } else {
        for (const auto& tp : *only)
            if (auto it = partitions_.find(tp); it != partitions_.end()) add(tp, it->second);
    }
    return out;
}

std::optional<OffsetToCommit> OffsetTracker::committable_at(const TopicPartition& tp,
                                                            Offset position) const {
    auto it = partitions_.find(tp);
    if (it == partitions_.end()) return std::nullopt;
    auto next = it->second.committable_at(position);
    if (!next) return std::nullopt;
    return OffsetToCommit{tp, *next};
}

void OffsetTracker::mark_committed(const std::vector<OffsetToCommit>& points) {
    for (const auto& p : points)
        if (auto it = partitions_.find(p.partition); it != partitions_.end())
            it->second.mark_committed(p.next);
}

std::size_t OffsetTracker::unfinished(const TopicPartition& tp) const {
    auto it = partitions_.find(tp);
    return it == partitions_.end() ? 0 : it->second.unfinished();
}

std::int64_t OffsetTracker::unfinished_window(const TopicPartition& tp) const {
    auto it = partitions_.find(tp);
    return it == partitions_.end() ? 0 : it->second.unfinished_window();
}

std::optional<Offset> OffsetTracker::committed(const TopicPartition& tp) const {
    auto it = partitions_.find(tp);
    if (it == partitions_.end()) return std::nullopt;
    return it->second.committed();
}

}  // namespace exo
