#include "runtime/outside_work.hpp"

#include <map>

#include <exo/errors.hpp>
#include "api/context_access.hpp"
#include "core/log_context.hpp"
#include "core/text.hpp"
#include "protocol/failure_matrix.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

struct LaneWork {
    std::vector<BatchRecord*> records;  // in batch order
    std::size_t done = 0;               // records whose call returned or threw
};

// The records not called (behind their lane's failed record, or after the
// calls were abandoned) wait in the inbox, in their order.
void requeue_uncalled(std::vector<LaneWork>& lanes) {
    for (auto& lane : lanes)
        for (std::size_t n = lane.done; n < lane.records.size(); ++n)
            lane.records[n]->requeue(std::chrono::milliseconds(0),
                                     "before_transaction() not run in this batch (a record of its "
                                     "lane ahead of it failed, or the batch was abandoned)");
}

}  // namespace

std::exception_ptr outside_failure(std::exception_ptr thrown) {
    try {
        std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
        switch (classify(e)) {
            case Failure::postgres_down:
            case Failure::redis_down:
                // Not exo's sessions (no transaction is open yet): the handler's own
                // client lost its server, a dependency of the handler.
                return std::make_exception_ptr(
                    DependencyError("before_transaction(): the handler's own connection failed: " +
                                    printable_text(e.what())));
            case Failure::aborted_transaction:
            case Failure::contention:
            case Failure::handler_unprepared:
                // Meant for exo's transaction; from the handler's own statements a
                // failure of the record's try like any other.
                return std::make_exception_ptr(
                    RetryableError("before_transaction(): " + printable_text(e.what())));
            case Failure::dependency_down:
            case Failure::retryable:
            case Failure::permanent:
                return thrown;
        }
    } catch (...) {
    }
    return thrown;
}

// A batch's lanes, from run(), on whose stack it lives. Lanes [0, taken) are
// someone's; open_ holds it while some are not (taken < lanes.size()). An
// outside thread touches it only under mutex_ while it is in open_, or to work
// the lane it took, counted in `helping`: run() returns only once no lane is
// left to take and `helping` is 0, read under mutex_, so no thread holds on to
// it (or to the batch) after.
struct OutsideWork::Open {
    Open(const BindingHandlers& handlers, std::uint64_t abandoned)
        : handlers(handlers), abandoned(abandoned) {}

    const BindingHandlers& handlers;
    const std::uint64_t abandoned;  // abandon_calls() when the batch started
    std::vector<LaneWork> lanes;
    std::size_t taken = 0;
    std::size_t helping = 0;           // lanes in progress on outside threads
    std::condition_variable helped;    // `helping` went to 0, under mutex_
    std::list<Open*>::iterator place;  // in open_, while taken < lanes.size()
};

OutsideWork::OutsideWork(int threads, PipelineStats& stats, spdlog::logger& log)
    : stats_(stats), log_(log) {
    for (int i = 0; i < threads; ++i)
        threads_.emplace_back([this](std::stop_token stop) { serve(stop); });
}

OutsideWork::~OutsideWork() {
    for (auto& thread : threads_) thread.request_stop();
    ready_.notify_all();
    threads_.clear();  // joins
}

OutsideWork::Open& OutsideWork::pick() {
    Open* best = open_.front();
    for (Open* open : open_)
        if (open->helping < best->helping) best = open;
    return *best;
}

std::size_t OutsideWork::take(Open& open) {
    const std::size_t lane = open.taken++;
    if (open.taken == open.lanes.size()) open_.erase(open.place);
    return lane;
}

void OutsideWork::serve(std::stop_token stop) {
    // The batch whose lane this thread has just worked, still counted in its
    // `helping` while the next is picked, so the threads spread over the
    // batches rather than all going back to the oldest.
    Open* was = nullptr;
    for (;;) {
        Open* open = nullptr;
        std::size_t lane = 0;
        {
            std::unique_lock lock(mutex_);
            if (!open_.empty()) open = &pick();
            if (was != nullptr) {
                // After this, `was` may be gone (its run() returned).
                if (--was->helping == 0) was->helped.notify_one();
                was = nullptr;
            }
            if (open == nullptr) {
                if (!ready_.wait(lock, stop, [&] { return !open_.empty(); })) return;
                open = &pick();
            }
            lane = take(*open);
            ++open->helping;
        }
        work(*open, lane);
        was = open;
    }
}

void OutsideWork::call(BatchRecord& record, const BindingHandlers& handlers) noexcept {
    const auto started = Clock::now();
    try {
        const auto& r = record.pending.record;
        LogContext log_context(r.topic, r.partition, r.offset, record.key, &record.pending.trace);
        auto ctx = detail::ContextAccess::outside(r, record.key, record.payload, log_,
                                                  record.pending.attempts + 1,
                                                  &record.pending.trace, record.handed_over);
        handlers.outside(*record.binding)->before_transaction(ctx);
    } catch (...) {
        record.outside_failure = outside_failure(std::current_exception());
        stats_.outside_failures++;
    }
    stats_.outside_ran(record.binding->topic, std::chrono::duration_cast<std::chrono::microseconds>(
                                                  Clock::now() - started));
}

void OutsideWork::work(Open& open, std::size_t lane) noexcept {
    // A lane's records in order, its first failure ending its work.
    auto& records = open.lanes[lane];
    for (auto* record : records.records) {
        if (abandoned_.load() != open.abandoned) break;
        call(*record, open.handlers);
        ++records.done;
        if (record->outside_failure) break;
    }
}

void OutsideWork::run(Batch& batch, const BindingHandlers& handlers) {
    Open open(handlers, abandoned_.load());
    {
        std::map<Lane, std::size_t> index;  // lane -> its place in `open.lanes`
        for (auto& record : batch) {
            if (!record.is_pending()) continue;
            if (handlers.outside(*record.binding) == nullptr) continue;
            const auto [at, added] = index.try_emplace(record.pending.lane(), open.lanes.size());
            if (added) open.lanes.emplace_back();
            open.lanes[at->second].records.push_back(&record);
        }
    }
    if (open.lanes.empty()) return;

    // With one lane, or no outside threads, this thread works every lane.
    const std::size_t helpers = std::min(open.lanes.size() - 1, threads_.size());
    bool shared = false;
    if (helpers > 0) {
        try {
            std::lock_guard lock(mutex_);
            open.place = open_.insert(open_.end(), &open);
            shared = true;
        } catch (...) {
            // Out of memory: this thread works every lane.
        }
        if (shared)
            for (std::size_t n = 0; n < helpers; ++n) ready_.notify_one();
    }
    if (!shared) {
        while (open.taken < open.lanes.size()) work(open, open.taken++);
    } else {
        // This thread takes its own batch's lanes, never another's, so it waits
        // only for lanes an outside thread has started.
        for (;;) {
            std::size_t lane = 0;
            {
                std::lock_guard lock(mutex_);
                if (open.taken == open.lanes.size()) break;
                lane = take(open);
            }
            work(open, lane);
        }
        std::unique_lock lock(mutex_);
        open.helped.wait(lock, [&] { return open.helping == 0; });
    }
    requeue_uncalled(open.lanes);
}

}  // namespace exo
