#pragma once
// One pipeline worker: takes batches from its inbox, runs each through the
// protocol of docs/design.md section 5 (batch_protocol.hpp: keys, claims,
// transactions, complete, dead letters, release), and hands the records back:
// finished offsets to the daemon, the rest to its inbox. It owns its threads,
// the inbox, its health and the leases of its batches.
//
// With pipeline.claim_ahead a worker has two threads: the
// claiming thread takes the next batch and runs its keys and claims while the
// applying thread runs the last one's transaction, complete and release; one
// prepared batch waits at most. The inbox never gives the two batches a common
// partition, and batches are applied and finished in the order taken, so
// partition order and the offsets are as with one thread. Without it, one
// thread does both, batch after batch.
//
// Lifecycle: start() launches the threads; they run until stop is requested,
// finishing the batches in hand (a prepared batch is applied, not dropped).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "kafka/producer.hpp"
#include "metrics/pipeline_stats.hpp"
#include "outbox/outbox_doorbell.hpp"
#include "pipeline/batch_protocol.hpp"
#include "pipeline/handler_registry.hpp"
#include "pipeline/lease_keeper.hpp"
#include "pipeline/passes/hand_back.hpp"
#include "pipeline/worker_inbox.hpp"

namespace exo {

// What a worker needs from the rest of the daemon. All references outlive the worker.
struct WorkerContext {
    const Config& config;
    const HandlerRegistry& handlers;
    ProducerOptions dead_letter_producer;  // each worker has its own producer
    PipelineStats& stats;
    Failpoints& failpoints;
    // Called from the worker thread with offsets whose outcome is durable.
    std::function<void(const std::vector<FinishedOffset>&)> on_finished;
    std::string owner_prefix;  // unique per process: worker owners are <prefix>/w<index>
    // The relay's, rung after a COMMIT that emitted; nullptr: no relay in this
    // process. Outlives the worker.
    OutboxDoorbell* outbox_doorbell = nullptr;
};

class Worker {
public:
    Worker(int index, WorkerContext context);
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    ~Worker();  // requests stop and joins

    WorkerInbox& inbox() { return inbox_; }
    void start();
    void request_stop();
    void join();
    // Stops renewing the claims of the batches in hand: called when a revoke's
    // drain deadline passed, so the partition's new owner can take the claims
    // over after one lease instead of waiting for this batch (PostgreSQL then
    // decides which transaction wins).
    // Sticks until the keeper's next batch: the worker's own hold() after its
    // claim step cannot undo it (LeaseKeeper says how). Thread-safe.
    void abandon_leases() {
        for (auto& keeper : lease_keepers_) keeper->abandon();
    }
    // True while the worker's dependencies answered on their last use, its
    // handlers prepared, and none of its partitions is stalled.
    // Thread-safe.
    bool healthy() const { return healthy_.load() && inbox_.stalled_partitions() == 0; }
    // Since when the worker runs the batch in hand; nullopt while it waits for
    // records. Thread-safe.
    // Claiming ahead, the earlier of the two threads' batches.
    std::optional<std::chrono::steady_clock::time_point> busy_since() const {
        const auto applying = busy_since_.load();
        const auto claiming = claiming_since_.load();
        const auto since = applying == kIdle   ? claiming
                           : claiming == kIdle ? applying
                                               : std::min(applying, claiming);
        if (since == kIdle) return std::nullopt;
        return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since));
    }
    // Whether Redis / PostgreSQL answered on this worker's last use of them.
    // Thread-safe.
    bool redis_up() const { return redis_up_.load() && claiming_redis_up_.load(); }
    bool postgres_up() const { return postgres_up_.load(); }

private:
    // A batch whose keys and claims ran, waiting for the applying thread.
    struct Prepared {
        std::unique_ptr<Batch> batch;  // never moves: its records point into it
        BatchEnd end;                  // of prepare(): only went_through is applied
        LeaseKeeper* leases;           // holds its claims until it is settled
        std::chrono::steady_clock::time_point taken_at;
    };

    void run(std::stop_token stop);           // one thread: prepare, apply, settle
    void run_claiming(std::stop_token stop);  // claim ahead: take, prepare, hand over
    void run_applying();                      // claim ahead: apply and settle what is handed over
    std::optional<Prepared> take_and_prepare(std::stop_token stop, LeaseKeeper& leases);
    // `since`: when the batch counts as in hand for busy_since().
    void apply_and_settle(Prepared prepared, std::chrono::steady_clock::time_point since);

    WorkerContext ctx_;
    std::string owner_;
    std::shared_ptr<spdlog::logger> log_;
    BatchProtocol protocol_;
    std::atomic<bool> healthy_{true};
    static constexpr std::chrono::steady_clock::rep kIdle = -1;
    std::atomic<std::chrono::steady_clock::rep> busy_since_{kIdle};      // applying
    std::atomic<std::chrono::steady_clock::rep> claiming_since_{kIdle};  // keys and claims
    std::atomic<bool> redis_up_{true};
    std::atomic<bool> claiming_redis_up_{true};
    std::atomic<bool> postgres_up_{true};  // set from the poll thread, for the batch in hand

    WorkerInbox inbox_;
    // One per batch in hand (two when claiming ahead): the prepared batch's
    // claims are renewed while it waits.
    std::vector<std::unique_ptr<LeaseKeeper>> lease_keepers_;

    // The hand-over between the claiming and the applying thread.
    std::mutex handover_mutex_;
    std::condition_variable_any handover_changed_;
    std::optional<Prepared> prepared_;  // guarded by handover_mutex_
    bool claiming_done_ = false;        // guarded by handover_mutex_

    // Last: stopped and joined before the members they use go.
    std::jthread applying_;  // the only thread without claim_ahead
    std::jthread claiming_;
};

}  // namespace exo
