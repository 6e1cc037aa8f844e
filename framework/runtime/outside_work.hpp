#pragma once
// The work handlers do outside their records' transaction
// (exo/outside_transaction.hpp): the process's outside threads
// (pipeline.outside_threads), shared by every batch runner's batches. A batch's records run
// their before_transaction() lane by lane: a lane's records one after another
// in batch order, different lanes at the same time, so a batch waits about as
// long as its slowest lane.
//
// Who takes a lane: the batch's own thread (the caller of run()) takes its
// batch's lanes one at a time, and only those; each free outside thread takes
// a lane of any batch in run() with lanes not yet taken, the one with the
// fewest outside threads on it first (the earliest among equals; a thread
// just done with a lane counts where it was), so the threads are shared
// evenly between the batch runners. A lane is taken when its work starts,
// never queued for a thread, so a batch waits only for its lanes in progress,
// never behind another batch's calls. At most outside_threads calls, plus one
// per batch in run(), are in progress.
//
// What a call hands over, or throws, stays with its record
// (BatchRecord::handed_over, ::outside_failure): the transaction step hands
// the value to handle() and rethrows the failure where handle() would have run
// (protocol/record_in_transaction.hpp), so a failure here follows the failure matrix as
// one of handle() would (after outside_failure() below). The records of a lane
// behind a failed one run nothing here and are put back behind it
// (fate::Requeue, no delay): its own fate, a retry or a dead letter, is
// decided in the transaction.
//
// Thread-safety: run() from any of the runners' threads, concurrently.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <list>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include <spdlog/logger.h>

#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/binding_handlers.hpp"

namespace exo {

// What a failure of before_transaction() means for its record: what the
// handler threw, but for what classify() (protocol/failure_matrix.hpp) reads
// as exo's own sessions failing, which before the transaction can only be the
// handler's own clients: a lost connection is the handler's dependency down
// (DependencyError: the runner pauses, uncounted), an aborted transaction, a
// lock timeout or a failed prepare a retryable failure of the record.
std::exception_ptr outside_failure(std::exception_ptr thrown);

class OutsideWork {
public:
    // Starts `threads` threads; 0: run() works every lane on the calling thread.
    // Throws std::system_error if a thread cannot start.
    OutsideWork(int threads, PipelineStats& stats, spdlog::logger& log);
    OutsideWork(const OutsideWork&) = delete;
    OutsideWork& operator=(const OutsideWork&) = delete;
    ~OutsideWork();  // stops and joins the threads; no run() may be in progress

    // Runs before_transaction() for every pending record of `batch` whose
    // binding's handler has one (`handlers`: the calling runner's instances), and
    // returns when every call returned. Decide records that must not call
    // (a dead-letter verdict carried from an earlier try, and what it holds
    // behind it) first. Never throws.
    void run(Batch& batch, const BindingHandlers& handlers);
    // The batches in progress make no more calls: each record not called yet
    // is put back as if a record of its lane ahead of it had failed. For a
    // revoke or shutdown whose deadline passed (BatchRunners::abandon_leases): those
    // records will be redelivered, here or to the partition's new owner, and
    // must not wait for, or make, calls meanwhile. Later batches call again.
    // Thread-safe.
    void abandon_calls() { ++abandoned_; }

private:
    struct Open;  // a batch's lanes, shared with the outside threads (outside_work.cpp)

    void serve(std::stop_token stop);
    Open& pick();  // under mutex_, open_ not empty: where an outside thread goes next
    // Starts the next lane of `open`, under mutex_; closes it on its last.
    std::size_t take(Open& open);
    void work(Open& open, std::size_t lane) noexcept;
    void call(BatchRecord& record, const BindingHandlers& handlers) noexcept;

    PipelineStats& stats_;
    spdlog::logger& log_;
    std::mutex mutex_;
    std::condition_variable_any ready_;        // a batch opened lanes, or stop
    std::list<Open*> open_;                    // batches with lanes not taken, oldest first
    std::atomic<std::uint64_t> abandoned_{0};  // abandon_calls() so far
    std::vector<std::jthread> threads_;        // last: they use everything above
};

}  // namespace exo
