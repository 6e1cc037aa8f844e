#pragma once
// The process's lane scheduler, between the poll thread and the batch runners
// (worker.hpp): a FIFO per lane (a
// partition, or one ordering key of it: bindings[].ordering, pending_record.hpp).
// A lane's order is kept because a lane is in at most one batch at a time, and
// records that could not finish (NACK, retry, gap) go back to the *front* of
// their lane, which is then held until their retry time: nothing behind them
// overtakes them, and nothing of other lanes waits for them.
//
// Several batches may be out at once: the batch runners (pipeline.concurrency)
// each run one. No two share a lane, and they finish in any order:
// the offsets of a partition are committed only below its lowest unfinished
// record (core/offset_tracker.hpp), whichever batch finishes first.
//
// A record waiting for a missing predecessor (strict sequence gap) is instead
// *parked*: set aside with its own retry time while the records behind it flow
// (one of them may be the predecessor). Its offset stays unfinished, so no
// commit passes it. While its lane is held, a parked record younger than the
// record holding it waits for the hold too: nothing of a key overtakes a record
// of that key that could not finish.
//
// Parked records are bounded per partition (ParkLimits, gap_parking.hpp: records
// and bytes), counted from the batch that first parks one until it leaves the
// inbox or is put back in its queue, in a batch included: a record meeting a
// *new* gap when its partition is at the bound is not parked but turned into a
// dead letter (no dedup row, as a gap timeout) and put back at the front of its
// lane, so the offsets pass it only once its letter is recorded.
//
// Lanes come and go with their records: a lane with nothing queued, parked,
// held or stalled, and in no batch, takes no memory, so a day of distinct keys
// leaves nothing behind.
//
// A held key holds only itself, memory included (held_lane_cap): a lane of an
// ordering key that is held or stalled keeps at most that many records queued;
// the records of its key pushed beyond that are *spilled*: only their offsets
// are kept, they stay unfinished (no commit passes them), and once the lane is
// free and short again the daemon reads them again from Kafka
// (held_keys().read_again_from, push_rereads()). Every later record of the key is spilled too until
// they are back, so the key's order holds. The daemon leaves the records held lanes still queue out
// of its pause decision (held_keys()): one key's retries do not pause its partition. The partition
// lane (ordering: partition, or keyless records) never spills: it is the partition, and pausing it
// costs nothing else.
//
// A taker finds work without a walk of every lane: an index holds the lanes
// ready now (something to take, in no batch), and a heap of due times the
// moments a held lane or a parked record becomes ready; every change to a lane
// looks at that lane again (refresh()), and a due time passing moves its lane
// into the index.
//
// Thread-safety: every method is safe from any thread. A batch is finished once,
// by whoever took it.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <stop_token>
#include <string_view>
#include <vector>

#include "scheduling/gap_parking.hpp"
#include "scheduling/pending_record.hpp"

namespace exo {

class WorkerInbox {
public:
    using Clock = std::chrono::steady_clock;
    using BatchId = std::uint64_t;

    // `takers`: the threads that take batches from it (pipeline.concurrency).
    // `held_lane_cap`: records a held key's lane keeps queued before it spills
    // (see above); 0: never spill. `park_limits`: the parked records a partition
    // may keep (see above); 0s: no bound.
    explicit WorkerInbox(int takers = 1, std::size_t held_lane_cap = 0, ParkLimits park_limits = {})
        : takers_(std::max(takers, 1)), held_lane_cap_(held_lane_cap), park_limits_(park_limits) {}

    struct Taken {
        BatchId id = 0;  // for finish_batch
        std::vector<PendingRecord> records;
    };

    // Queues polled records at the back of their lanes, or spills them (above),
    // setting each one's PendingRecord::bytes.
    void push(std::vector<PendingRecord> records);
    // Records read again from Kafka in read-again window `window` (any number
    // that differs from window to window): each one that is the oldest spilled
    // record of its lane goes to the back of that lane (unless the lane must
    // still spill); any other that is not spilled is already queued, in a
    // batch or finished, and is discarded. Returns the spilled offsets this
    // proves gone from Kafka (compacted or deleted while spilled): older
    // spilled records of the same lane the window passed without delivering.
    // Nothing will ever apply them; the caller finishes them.
    std::vector<FinishedOffset> push_rereads(std::vector<PendingRecord> records,
                                             std::uint64_t window);
    // Read-again window `window` of `tp` read everything up to `end`: the
    // spilled offsets below it it did not deliver are gone from Kafka. Returns
    // them (removed) for the caller to finish.
    std::vector<FinishedOffset> forget_unread_spilled(const TopicPartition& tp, Offset end,
                                                      std::uint64_t window);

    // Blocks until a record is ready (its lane neither held nor in a batch out)
    // or stop is requested, then waits for `max` ready records until `linger`
    // after the longest-waiting one became ready (polled, or due): records that
    // waited while this taker ran its last batch are taken at once, not held
    // another linger (a batch is already what they make together).
    // Returns ready records, each lane's in order (none only when stopping): at
    // most `max`, and at most one taker's share of what is ready (ready /
    // takers), so a slow handler's backlog spreads over every thread instead of
    // filling one long transaction while the others find every lane taken.
    Taken take_batch(std::size_t max, std::chrono::milliseconds linger, std::stop_token stop);

    struct Parked {
        PendingRecord record;
        Clock::time_point due;
    };

    // Ends batch `id`. `requeue` goes back to the front of its lanes in the
    // given order; `hold_until` holds lanes until then (or longer, if a lane is
    // already held longer); `parked` waits aside until due. What it puts back
    // of partitions dropped while *this* batch was out is discarded; a batch
    // taken after the partition came back to this member keeps its put-backs.
    // Everything passed belongs to that batch's lanes.
    // A `parked` record that holds no parked place yet (PendingRecord::parked)
    // takes one, in the given order, unless its partition is at the bound: then
    // it gets a dead-letter verdict (refuse_park()'s reason) and goes back to
    // the front of its lane, unheld, in offset order among `requeue`. Returns
    // the partition of each record so refused.
    std::vector<TopicPartition> finish_batch(BatchId id, std::vector<PendingRecord> requeue,
                                             const std::map<Lane, Clock::time_point>& hold_until,
                                             std::vector<Parked> parked = {});

    // Discards the queued records of these partitions and waits until the
    // batches out now that hold any of their lanes finished, or `deadline`
    // passes. Returns false if the deadline passed first.
    bool drop_partitions(const std::vector<TopicPartition>& partitions, Clock::time_point deadline);

    // Records of the partition waiting in its lanes, parked ones excluded: the
    // daemon pauses a partition on this and in_batch(), and pausing for parked
    // records could keep out the very predecessor they wait for.
    std::size_t queued(const TopicPartition& tp) const;
    // The same records' PendingRecord::bytes (record_limits.hpp), kept as they
    // come and go: the daemon pauses on bytes as on records, without a walk.
    std::size_t queued_bytes(const TopicPartition& tp) const;
    // Records of the partition parked now.
    std::size_t parked(const TopicPartition& tp) const;
    // Records of the partition holding a parked place (above): parked now, or
    // in a batch out from there; and their bytes. What ParkLimits bound.
    ParkedLoad parked_load(const TopicPartition& tp) const;
    std::size_t spilled(const TopicPartition& tp) const;

    // What back-pressure and re-reading need of a partition, in one walk of its
    // lanes.
    struct HeldKeys {
        std::size_t queued = 0;        // records queued in held or stalled key lanes
        std::size_t queued_bytes = 0;  // ... and their bytes
        std::size_t spilled = 0;       // spilled records of lanes still held or stalled
        // The oldest spilled offset of the partition, when a lane with spilled
        // records is free and short again: where to read from again.
        std::optional<Offset> read_again_from;
    };
    HeldKeys held_keys(const TopicPartition& tp) const;
    // Records of the partition in a batch out now, and their bytes.
    std::size_t in_batch(const TopicPartition& tp) const;
    std::size_t in_batch_bytes(const TopicPartition& tp) const;

    struct Totals {
        std::size_t queued = 0;  // waiting in a lane, parked ones excluded
        std::size_t parked = 0;
        std::size_t in_batch = 0;
        std::size_t spilled = 0;  // offsets only: read again from Kafka later
        // Lanes held by a record that must retry later (NACK, retry, stall),
        // the records queued behind the first of each, and the distinct Kafka
        // keys among those other than that record's: under ordering partition
        // these are the keys one key's retries hold up (what ordering key
        // would free); under key or entity, 0 but for keyless records.
        std::size_t held_lanes = 0;
        std::size_t waiting_behind_held = 0;
        std::size_t keys_waiting_behind_held = 0;
        std::size_t batches_out = 0;
        std::size_t lanes = 0;  // with records queued or parked
    };
    Totals totals() const;
    // totals().queued + totals().in_batch without the walk over every lane: the
    // daemon's poll loop asks on every turn.
    std::size_t in_flight() const;
    // The bytes of the same records.
    std::size_t in_flight_bytes() const;
    // totals().spilled without the walk over every lane.
    std::size_t spilled_total() const;

    // Lanes held by a stalled record (PendingRecord::stalled: it could not be
    // recorded even as a dead letter, so nothing behind it may pass), from the
    // finish_batch that requeued it until clear_stalled() or a drop; a retry in
    // progress does not make the lane look healthy.
    std::size_t stalled_lanes() const;
    bool stalled(const TopicPartition& tp) const;  // any lane of it
    // The stalled record of `lane` reached an outcome.
    void clear_stalled(const Lane& lane);
    bool batch_in_progress() const;

private:
    struct LaneState {
        std::deque<PendingRecord> queue;
        std::size_t queued_bytes = 0;  // of `queue`
        std::vector<Parked> parked;    // sorted by offset
        std::optional<Clock::time_point> held_until;
        struct Spilled {
            Offset offset;
            std::uint64_t seen_in = 0;  // the last read-again window that delivered it
        };
        std::deque<Spilled> spilled;  // ascending; all younger than `queue`
        // The earliest due time of this lane in due_ not yet reached, if any.
        std::optional<Clock::time_point> wake;
    };
    using ParkedLoads = std::map<TopicPartition, ParkedLoad>;
    struct BatchOut {
        std::set<Lane> lanes;
        std::map<TopicPartition, std::size_t> records;  // taken, per partition
        std::map<TopicPartition, std::size_t> bytes;    // their bytes
        ParkedLoads parked;                             // of those, the ones holding a parked place
        // Its partitions dropped (revoked) while it was out: what it puts back
        // of them is discarded at finish_batch, and drop_partitions waits for it.
        std::set<TopicPartition> dropped;
    };

    // Records ready now, over the lanes of ready_ (after advance(now)); lowers
    // *next_release to the next due time of due_, and *ready_since to when the
    // longest-waiting ready record became ready (polled, or due).
    std::size_t ready_count(Clock::time_point now, Clock::time_point* next_release,
                            Clock::time_point* ready_since = nullptr);
    // Looks at `lane` again: in ready_ exactly when it has something to take
    // now and is in no batch; when it will have later (a hold ending, a parked
    // record due), a due_ entry no later than that time.
    void refresh(const Lane& lane, Clock::time_point now);
    // Refreshes the lanes whose due times passed.
    void advance(Clock::time_point now);
    // Takes up to `limit` ready records of `lane` into `out`; true if any.
    bool take_lane(LaneState& lane, Clock::time_point now, std::size_t limit,
                   std::vector<PendingRecord>& out);
    static bool is_held(const LaneState& lane, Clock::time_point now) {
        return lane.held_until && *lane.held_until > now;
    }
    // A parked record younger than the record at the head of its held lane
    // waits for that hold too: it must not overtake it.
    static bool behind_held_head(const LaneState& lane, const Parked& parked) {
        return !lane.queue.empty() &&
               parked.record.record.offset > lane.queue.front().record.offset;
    }
    // A key lane that is held or stalled and has held_lane_cap_ records queued:
    // what comes next of its key is spilled.
    bool must_spill(const Lane& lane, const LaneState& state, Clock::time_point now) const;
    // Queues `r` at the back of its lane, counted in the partition's and the lane's
    // queued records and bytes; mutex_ held.
    void enqueue(LaneState& state, const TopicPartition& tp, PendingRecord r);
    bool held_or_stalled(const Lane& lane, const LaneState& state, Clock::time_point now) const {
        return is_held(state, now) || stalled_.contains(lane);
    }
    // The first spilled record at or after `offset`.
    static std::deque<LaneState::Spilled>::iterator lower_spilled(
        std::deque<LaneState::Spilled>& spilled, Offset offset);
    // Forgets the lane when nothing keeps it (see the file comment).
    void collect(std::map<Lane, LaneState>::iterator it);
    // Erases a lane (ready_ with it); returns the next.
    std::map<Lane, LaneState>::iterator erase_lane(std::map<Lane, LaneState>::iterator it);

    mutable std::mutex mutex_;
    std::condition_variable_any changed_;
    std::map<Lane, LaneState> lanes_;
    std::set<Lane> in_batch_;  // lanes of every batch out
    // The index of lanes ready now, and when others become ready (file comment).
    // A due_ entry may be stale (its lane changed since): it only costs a refresh.
    std::set<Lane> ready_;
    using Due = std::pair<Clock::time_point, Lane>;
    std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
    std::map<BatchId, BatchOut> batches_;                                      // out now
    std::map<TopicPartition, std::size_t> queued_, parked_, taken_, spilled_;  // record counts
    std::map<TopicPartition, std::size_t> queued_bytes_, taken_bytes_;  // of queued_ and taken_
    // Records holding a parked place (see above), parked and in batches out:
    // what ParkLimits bound.
    ParkedLoads parked_load_;
    std::set<Lane> stalled_;
    // Where the last batch stopped taking: the next starts after it, so every
    // lane gets its turn.
    std::optional<Lane> last_lane_;
    BatchId next_id_ = 1;
    const int takers_;
    const std::size_t held_lane_cap_;
    const ParkLimits park_limits_;
    std::uint64_t generation_ = 0;  // bumped on every change a waiting worker must see
};

}  // namespace exo
