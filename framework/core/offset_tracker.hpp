#pragma once
// Which offsets may be committed (docs/design.md#offsets): per partition, the
// lowest offset not yet finished, so nothing below an unfinished record is ever
// committed, however out of order records finish. Offsets need not be
// contiguous (compaction and transaction markers leave gaps).
//
// Pure and not thread-safe: the daemon guards it with a mutex.
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <exo/types.hpp>
#include "core/offset_to_commit.hpp"

namespace exo {

class PartitionOffsets {
public:
    // Every record handed to a worker is tracked, and stays unfinished until its
    // finish(). A re-fetch (after a seek, or records of a revoked-and-reassigned
    // partition arriving in one poll with older ones) is tracked again: it is
    // being processed again, so nothing may be committed past it meanwhile.
    // Offsets below the last commit are durable already and ignored.
    void track(Offset offset);
    // Marks a tracked offset finished; unknown offsets are ignored.
    void finish(Offset offset);
    // The next offset to commit if it moved since the last mark_committed(), else nullopt.
    std::optional<Offset> committable() const;
    // `position` (the consumer's next fetch offset, every record before it handed
    // over) if every tracked record is finished and it lies past the last of them
    // and past the last commit: what is between are transaction markers, which no
    // record stands for. Else nullopt.
    std::optional<Offset> committable_at(Offset position) const;
    void mark_committed(Offset next);
    std::size_t unfinished() const { return unfinished_.size(); }
    // Offsets from the lowest unfinished one to the highest tracked: what a
    // restart would read again (finished records among them are deduplicated).
    // 0 when nothing is unfinished.
    std::int64_t unfinished_window() const {
        if (unfinished_.empty() || !highest_tracked_) return 0;
        return *highest_tracked_ - *unfinished_.begin() + 1;
    }
    // The next offset to read as last marked committed; nullopt before the first.
    std::optional<Offset> committed() const {
        if (!committed_next_) return std::nullopt;
        return Offset{*committed_next_};
    }

private:
    std::set<std::int64_t> unfinished_;
    std::optional<std::int64_t> highest_tracked_;
    std::optional<std::int64_t> committed_next_;
};

class OffsetTracker {
public:
    void track(const TopicPartition& tp, Offset offset) { partitions_[tp].track(offset); }
    // Finishing a record of a partition no longer tracked (revoked) is ignored.
    void finish(const TopicPartition& tp, Offset offset);
    // Offsets that moved since they were last marked committed (all, or only `only`).
    std::vector<OffsetToCommit> committable(
        const std::vector<TopicPartition>* only = nullptr) const;
    // PartitionOffsets::committable_at for a tracked partition.
    std::optional<OffsetToCommit> committable_at(const TopicPartition& tp, Offset position) const;
    void mark_committed(const std::vector<OffsetToCommit>& points);
    void forget(const TopicPartition& tp) { partitions_.erase(tp); }
    std::size_t unfinished(const TopicPartition& tp) const;
    std::int64_t unfinished_window(const TopicPartition& tp) const;
    std::optional<Offset> committed(const TopicPartition& tp) const;

private:
    std::map<TopicPartition, PartitionOffsets> partitions_;
};

}  // namespace exo
