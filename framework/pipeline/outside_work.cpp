#include "pipeline/outside_work.hpp"

#include <latch>
#include <map>

#include "core/context_access.hpp"
#include "core/log_context.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

struct LaneWork {
    std::vector<BatchRecord*> records;  // in batch order
    std::size_t done = 0;               // records whose call returned
};

// The records of a lane behind its failed record wait for it in the inbox.
void requeue_behind_failures(std::map<Lane, LaneWork>& lanes) {
    for (auto& [_, lane] : lanes)
        for (std::size_t n = lane.done; n < lane.records.size(); ++n)
            lane.records[n]->requeue(std::chrono::milliseconds(0),
                                     "behind a record of its lane whose before_transaction() "
                                     "failed");
}

}  // namespace

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

void OutsideWork::serve(std::stop_token stop) {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock lock(mutex_);
            if (!ready_.wait(lock, stop, [&] { return !tasks_.empty(); })) return;
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();
    }
}

void OutsideWork::submit(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
}

void OutsideWork::run(Batch& batch, const BindingHandlers& handlers) {
    std::map<Lane, LaneWork> lanes;
    for (auto& record : batch) {
        if (record.fate != Fate::pending || record.pending.dead_letter) continue;
        const auto* handler = handlers.outside(*record.binding);
        if (handler == nullptr) continue;
        record.handed_over.reset();  // a batch's work is its own
        record.outside_failure = nullptr;
        lanes[record.pending.lane()].records.push_back(&record);
    }
    if (lanes.empty()) return;

    // One lane's records in order; the first failure ends the lane's work.
    const auto work = [&](LaneWork& lane) {
        for (auto* record : lane.records) {
            const auto& r = record->pending.record;
            LogContext log_context(r.topic, r.partition, r.offset, record->key,
                                   &record->pending.trace);
            const auto started = Clock::now();
            try {
                auto ctx = detail::ContextAccess::outside(
                    r, record->key, record->payload, log_, record->pending.attempts + 1,
                    &record->pending.trace, record->handed_over);
                handlers.outside(*record->binding)->before_transaction(ctx);
            } catch (...) {
                record->outside_failure = std::current_exception();
                stats_.outside_failures++;
            }
            stats_.outside_ran(
                record->binding->topic,
                std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started));
            ++lane.done;
            if (record->outside_failure) return;
        }
    };
    if (threads_.empty()) {
        for (auto& [_, lane] : lanes) work(lane);
        requeue_behind_failures(lanes);
        return;
    }
    std::latch finished(static_cast<std::ptrdiff_t>(lanes.size() - 1));
    auto first = lanes.begin();
    for (auto it = std::next(first); it != lanes.end(); ++it) {
        LaneWork& lane = it->second;
        submit([&work, &lane, &finished] {
            work(lane);
            finished.count_down();
        });
    }
    work(first->second);  // this thread's share, instead of waiting idle
    finished.wait();
    requeue_behind_failures(lanes);
}

}  // namespace exo
