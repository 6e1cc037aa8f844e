#include "pipeline/outside_work.hpp"

#include <map>

#include <exo/errors.hpp>
#include "core/context_access.hpp"
#include "core/log_context.hpp"
#include "core/text.hpp"
#include "pipeline/failure_matrix.hpp"

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
        task();  // never throws (run() makes them so)
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
    std::vector<LaneWork> lanes;
    {
        std::map<Lane, std::size_t> index;  // lane -> its place in `lanes`
        for (auto& record : batch) {
            if (record.fate != Fate::pending) continue;
            if (handlers.outside(*record.binding) == nullptr) continue;
            const auto [at, added] = index.try_emplace(record.pending.lane(), lanes.size());
            if (added) lanes.emplace_back();
            lanes[at->second].records.push_back(&record);
        }
    }
    if (lanes.empty()) return;

    // One record's call; what it throws stays with the record.
    const auto call = [&](BatchRecord& record) noexcept {
        const auto started = Clock::now();
        try {
            const auto& r = record.pending.record;
            LogContext log_context(r.topic, r.partition, r.offset, record.key,
                                   &record.pending.trace);
            auto ctx = detail::ContextAccess::outside(r, record.key, record.payload, log_,
                                                      record.pending.attempts + 1,
                                                      &record.pending.trace, record.handed_over);
            handlers.outside(*record.binding)->before_transaction(ctx);
        } catch (...) {
            record.outside_failure = outside_failure(std::current_exception());
            stats_.outside_failures++;
        }
        stats_.outside_ran(
            record.binding->topic,
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started));
    };
    // Lanes are taken one at a time by whoever is free, this thread included: a
    // lane's records in order, its first failure ending its work.
    std::atomic<std::size_t> next{0};
    const std::uint64_t abandoned = abandoned_.load();
    const auto drain = [&]() noexcept {
        for (std::size_t i; (i = next++) < lanes.size();) {
            auto& lane = lanes[i];
            for (auto* record : lane.records) {
                if (abandoned_.load() != abandoned) break;
                call(*record);
                ++lane.done;
                if (record->outside_failure) break;
            }
        }
    };
    // Helpers done, under `mutex`: this thread returns (and `lanes` goes) only
    // after the last one has let go of everything here.
    std::mutex mutex;
    std::condition_variable all_done;
    std::size_t helping = 0;
    const std::size_t helpers = std::min(lanes.size() - 1, threads_.size());
    for (std::size_t n = 0; n < helpers; ++n) {
        {
            std::lock_guard lock(mutex);
            ++helping;
        }
        try {
            submit([&]() noexcept {
                drain();
                std::lock_guard lock(mutex);
                if (--helping == 0) all_done.notify_all();
            });
        } catch (...) {
            std::lock_guard lock(mutex);
            --helping;
            break;  // out of memory: this thread drains what is left
        }
    }
    drain();
    {
        std::unique_lock lock(mutex);
        all_done.wait(lock, [&] { return helping == 0; });
    }
    requeue_uncalled(lanes);
}

}  // namespace exo
