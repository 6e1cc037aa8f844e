#pragma once
// One pipeline worker: a thread that takes batches from its inbox, runs each
// through the protocol of docs/design.md section 5 (batch_protocol.hpp: keys,
// claims, transactions, complete, dead letters, release), and hands the
// records back: finished offsets to the daemon, the rest to its inbox. It
// owns the thread, the inbox, its health and the leases of the batch in hand.
//
// Lifecycle: start() launches the thread; it runs until the stop token is
// requested, finishing the batch in hand.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
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
    void request_stop() { thread_.request_stop(); }
    void join();
    // Stops renewing the claims of the batch in hand: called when a revoke's
    // drain deadline passed, so the partition's new owner can take the claims
    // over after one lease instead of waiting for this batch (PostgreSQL then
    // decides which transaction wins).
    // Sticks until the next batch: the worker's own hold() after its claim
    // step cannot undo it (LeaseKeeper says how). Thread-safe.
    void abandon_leases() { lease_keeper_.abandon(); }
    // True while the worker's dependencies answered on their last use, its
    // handlers prepared, and none of its partitions is stalled.
    // Thread-safe.
    bool healthy() const { return healthy_.load() && inbox_.stalled_partitions() == 0; }
    // Since when the worker runs the batch in hand; nullopt while it waits for
    // records. Thread-safe.
    std::optional<std::chrono::steady_clock::time_point> busy_since() const {
        const auto since = busy_since_.load();
        if (since == kIdle) return std::nullopt;
        return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since));
    }
    // Whether Redis / PostgreSQL answered on this worker's last use of them.
    // Thread-safe.
    bool redis_up() const { return redis_up_.load(); }
    bool postgres_up() const { return postgres_up_.load(); }

private:
    void run(std::stop_token stop);
    void run_batch(std::vector<PendingRecord> taken);

    WorkerContext ctx_;
    std::string owner_;
    std::shared_ptr<spdlog::logger> log_;
    BatchProtocol protocol_;
    std::atomic<bool> healthy_{true};
    static constexpr std::chrono::steady_clock::rep kIdle = -1;
    std::atomic<std::chrono::steady_clock::rep> busy_since_{kIdle};
    std::atomic<bool> redis_up_{true};
    std::atomic<bool> postgres_up_{true};  // set from the poll thread, for the batch in hand

    WorkerInbox inbox_;
    LeaseKeeper lease_keeper_;
    std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace exo
