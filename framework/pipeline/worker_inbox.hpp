#pragma once
// The queue between the poll thread and one worker: a FIFO per partition.
// Partition order is kept because a partition is in at most one batch at a
// time, and records that could not finish (NACK, retry, gap) go back to the
// *front* of their partition's queue, which is then held until their retry
// time: nothing behind them overtakes them. A worker may have two batches out
// at once (it claims the next while the last one commits, pipeline.claim_ahead);
// the second never holds a partition of the first.
//
// A record waiting for a missing predecessor (strict sequence gap) is instead
// *parked*: set aside with its own retry time while the records behind it flow
// (one of them may be the predecessor). Its offset stays unfinished, so no
// commit passes it.
//
// Thread-safety: every method is safe from any thread. take_batch/finish_batch
// are called by the owning worker only; batches finish in the order they were
// taken.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <vector>

#include "pipeline/pending_record.hpp"

namespace exo {

class WorkerInbox {
public:
    using Clock = std::chrono::steady_clock;

    void push(std::vector<PendingRecord> records);

    // Blocks until a record is ready (its partition neither held nor in a batch
    // not yet finished) or stop is requested, then waits up to `linger` for
    // `max` ready records. Returns ready records in partition order (empty only
    // when stopping).
    std::vector<PendingRecord> take_batch(std::size_t max, std::chrono::milliseconds linger,
                                          std::stop_token stop);

    struct Parked {
        PendingRecord record;
        Clock::time_point due;
    };

    // Ends the oldest batch not yet finished. `requeue` goes back to the front of
    // its partitions in the given order; `hold_until` holds partitions until
    // then; `parked` waits aside until due. Records of partitions dropped
    // meanwhile are discarded. Everything passed belongs to that batch's
    // partitions.
    void finish_batch(std::vector<PendingRecord> requeue,
                      const std::map<TopicPartition, Clock::time_point>& hold_until,
                      std::vector<Parked> parked = {});

    // Discards the queued records of these partitions and waits until the
    // batches in progress that hold any of them finished, or `deadline` passes.
    // Returns false if the deadline passed first.
    bool drop_partitions(const std::vector<TopicPartition>& partitions, Clock::time_point deadline);

    // Records waiting in the partition's queue, parked ones excluded: the
    // daemon pauses a partition on this, and pausing for parked records could
    // keep out the very predecessor they wait for.
    std::size_t queued(const TopicPartition& tp) const;
    std::size_t parked(const TopicPartition& tp) const;
    std::size_t queued_total() const;
    // Partitions held by a stalled record (PendingRecord::stalled: it could not
    // be recorded even as a dead letter, so nothing behind it may pass), from
    // the finish_batch that requeued it until clear_stalled() or a drop; a retry
    // in progress does not make the partition look healthy.
    std::size_t stalled_partitions() const;
    bool stalled(const TopicPartition& tp) const;
    // The stalled record of `tp` reached an outcome.
    void clear_stalled(const TopicPartition& tp);
    bool batch_in_progress() const;

private:
    std::size_t ready_count(Clock::time_point now, Clock::time_point* next_release) const;
    bool in_batch(const TopicPartition& tp) const { return in_batch_.contains(tp); }

    mutable std::mutex mutex_;
    std::condition_variable_any changed_;
    std::map<TopicPartition, std::deque<PendingRecord>> queues_;
    std::map<TopicPartition, Clock::time_point> held_until_;
    std::map<TopicPartition, std::vector<Parked>> parked_;  // sorted by offset
    std::set<TopicPartition> in_batch_;                     // of every batch not yet finished
    std::deque<std::set<TopicPartition>> batches_taken_;    // each one's partitions, oldest first
    std::set<TopicPartition> stalled_;
    std::set<TopicPartition> dropped_during_batch_;
    std::size_t rotation_ = 0;      // first partition of the next batch, for fairness
    std::uint64_t generation_ = 0;  // bumped on every change a waiting worker must see
};

}  // namespace exo
