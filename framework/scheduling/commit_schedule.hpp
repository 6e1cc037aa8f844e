#pragma once
// When the poll loop commits finished offsets (docs/design.md#offsets). The
// periodic commit is asynchronous: the poll thread queues it and goes on
// fetching and dispatching, so a slow broker answer delays the commit, never a
// record. The schedule decides when one is due; the daemon reports what it sent
// and what the broker answered.
//
// A commit is due every `interval`, and sooner once the pipeline has drained
// (nothing in flight, something finished since the last commit), but not more
// often than every interval / 10: a consumer that keeps up shows lag 0 within a
// tenth of the interval instead of a whole one. At most one asynchronous commit
// is unanswered at a time, so a slow broker gets one request, not ten a
// second; one unanswered for `interval * kUnansweredIntervals` no longer holds
// the next back (librdkafka answers every commit, with an error at worst: this
// only bounds what a lost answer would cost).
//
// Pure and not thread-safe: the clock is passed in; the poll thread owns it.
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace exo {

class CommitSchedule {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr int kUnansweredIntervals = 30;

    // `interval`: kafka.commit_interval_ms (> 0). The first periodic commit is due
    // one interval after `start`.
    CommitSchedule(std::chrono::milliseconds interval, Clock::time_point start)
        : interval_(interval), next_(start + interval), last_(start) {}

    // Whether to commit now, given the records in flight and the count of
    // records finished so far (monotonic).
    bool due(Clock::time_point now, std::size_t in_flight, std::uint64_t finished) const {
        if (unanswered_ && now < sent_at_ + interval_ * kUnansweredIntervals) return false;
        const bool drained =
            in_flight == 0 && finished != finished_at_last_ && now >= last_ + interval_ / 10;
        return now >= next_ || drained;
    }

    // A commit covering what was finished up to `finished` was queued at `now`
    // (or found nothing to commit: then `queued` is false and nothing is awaited).
    void sent(Clock::time_point now, std::uint64_t finished, bool queued) {
        finished_at_last_ = finished;
        last_ = now;
        next_ = now + interval_;
        if (queued) {
            unanswered_ = true;
            sent_at_ = now;
        }
    }

    // The broker answered the asynchronous commit (accepted or refused).
    void answered() { unanswered_ = false; }

    bool awaiting_answer() const { return unanswered_; }

private:
    std::chrono::milliseconds interval_;
    Clock::time_point next_, last_, sent_at_{};
    std::uint64_t finished_at_last_ = 0;
    bool unanswered_ = false;
};

}  // namespace exo
