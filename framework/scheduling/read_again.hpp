#pragma once
// Which fetched records are the re-reads the daemon asked for. A held key's
// records beyond its lane's cap are spilled (worker_inbox.hpp): only their
// offsets are kept, and once the key is free the daemon rewinds the partition
// to the oldest of them. Everything fetched again up to where the partition had
// been read is a re-read: the spilled ones go back to their lanes, the rest were
// handed over before and are dropped. Past that point records are fresh again.
//
// Only a window opened here makes a record a re-read: a record older than what
// was read before for any other reason (a re-assignment's first fetch landing in
// one poll with older records) is still handed over and tracked as fresh, so
// nothing is dropped that was not handed over in this assignment.
//
// Pure and not thread-safe: the daemon's poll thread owns it.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

#include <exo/types.hpp>

namespace exo {

class ReadAgain {
public:
    using Clock = std::chrono::steady_clock;
    // A window that saw nothing for this long is taken as lost (the rewind
    // did not happen, or the records are gone): another may be opened.
    static constexpr std::chrono::seconds kStale{30};

    enum class Fetched { fresh, reread };
    struct Classified {
        Fetched kind = Fetched::fresh;
        std::uint64_t window = 0;  // reread: the window it belongs to
        // Set when this record showed the fetch passed the whole window: the
        // window's end; spilled records below it it did not deliver are gone
        // from Kafka (WorkerInbox::forget_unread_spilled).
        std::optional<Offset> closed_window_end;
        std::uint64_t closed_window = 0;
    };

    // Classifies one fetched record of `tp`, in fetch order. A window closes
    // at its last offset, or at a fresh record after one of its re-reads (the
    // fetch goes in offset order from the rewind, so it passed the window; its
    // last record may be gone). Records fetched before the rewind are all past
    // the window's end, so they never count as re-reads.
    Classified fetched(const TopicPartition& tp, Offset offset, Clock::time_point now);
    // Opens a window from `from` up to what was read so far. False (nothing
    // opened) while a window of `tp` is open and not stale, or when nothing at
    // or past `from` was read yet. The caller then rewinds the consumer to `from`.
    bool open(const TopicPartition& tp, Offset from, Clock::time_point now);
    bool reading_again(const TopicPartition& tp) const;
    // The partition was revoked (or assigned afresh).
    void forget(const TopicPartition& tp) { partitions_.erase(tp); }

private:
    struct Window {
        std::uint64_t id = 0;
        std::int64_t from = 0;
        std::int64_t end = 0;  // one past the last offset read before the rewind
        Clock::time_point last_seen{};
        bool reread_seen = false;
    };
    struct PartitionState {
        std::optional<std::int64_t> next_fresh;  // one past the highest fresh offset
        std::optional<Window> window;
    };
    std::map<TopicPartition, PartitionState> partitions_;
    std::uint64_t next_window_ = 1;
};

}  // namespace exo
