#pragma once
// The work handlers do outside their records' transaction
// (exo/outside_transaction.hpp): a worker's outside threads
// (pipeline.outside_threads), shared by its batches. A batch's records run
// their before_transaction() lane by lane: a lane's records one after another
// in batch order, different lanes at the same time, taken one at a time by
// the calling thread and up to outside_threads helpers, so a batch waits
// about as long as its slowest lane.
//
// What a call hands over, or throws, stays with its record
// (BatchRecord::handed_over, ::outside_failure): the transaction step hands
// the value to handle() and rethrows the failure where handle() would have run
// (pipeline/record_step.hpp), so a failure here follows the failure matrix as
// one of handle() would (after outside_failure() below). The records of a lane
// behind a failed one run nothing here and are put back behind it
// (Fate::requeue, no delay): its own fate, a retry or a dead letter, is
// decided in the transaction.
//
// Thread-safety: run() from any of the worker's threads, concurrently.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include <spdlog/logger.h>

#include "metrics/pipeline_stats.hpp"
#include "pipeline/batch.hpp"
#include "pipeline/binding_handlers.hpp"

namespace exo {

// What a failure of before_transaction() means for its record: what the
// handler threw, but for what classify() (pipeline/failure_matrix.hpp) reads
// as exo's own sessions failing, which before the transaction can only be the
// handler's own clients: a lost connection is the handler's dependency down
// (DependencyError: the worker pauses, uncounted), an aborted transaction, a
// lock timeout or a failed prepare a retryable failure of the record.
std::exception_ptr outside_failure(std::exception_ptr thrown);

class OutsideWork {
public:
    // Starts `threads` threads; 0: run() works every lane on the calling thread.
    OutsideWork(int threads, PipelineStats& stats, spdlog::logger& log);
    OutsideWork(const OutsideWork&) = delete;
    OutsideWork& operator=(const OutsideWork&) = delete;
    ~OutsideWork();  // stops and joins the threads; no run() may be in progress

    // Runs before_transaction() for every pending record of `batch` whose
    // binding's handler has one (`handlers`: the calling slot's instances), and
    // returns when every call returned. Decide records that must not call
    // (a dead-letter verdict carried from an earlier try, and what it holds
    // behind it) first. Never throws.
    void run(Batch& batch, const BindingHandlers& handlers);
    // The batches in progress make no more calls: each record not called yet
    // is put back as if a record of its lane ahead of it had failed. For a
    // revoke or shutdown whose deadline passed (Worker::abandon_leases): those
    // records will be redelivered, here or to the partition's new owner, and
    // must not wait for, or make, calls meanwhile. Later batches call again.
    // Thread-safe.
    void abandon_calls() { ++abandoned_; }

private:
    void serve(std::stop_token stop);
    void submit(std::function<void()> task);

    PipelineStats& stats_;
    spdlog::logger& log_;
    std::mutex mutex_;
    std::condition_variable_any ready_;
    std::deque<std::function<void()>> tasks_;
    std::atomic<std::uint64_t> abandoned_{0};  // abandon_calls() so far
    std::vector<std::jthread> threads_;        // last: they use everything above
};

}  // namespace exo
