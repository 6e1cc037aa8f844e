#pragma once
// One pipeline worker: takes batches from its inbox, runs each through the
// protocol of docs/design.md#per-record (batch_protocol.hpp: keys, claims,
// transactions, complete, dead letters, release), and hands the records back:
// finished offsets to the daemon, the rest to its inbox. It owns its threads,
// the inbox, its health and the leases of its batches.
//
// With pipeline.concurrency N it runs N batches at once, one per slot, each on
// its own thread with its own sessions. The inbox never gives two batches a
// common lane (a partition, or one ordering key of it), and finished offsets
// are committed below the lowest unfinished one, so lane order and the offsets
// hold whichever batch finishes first. A slot's thread runs each batch whole,
// keys and claims through release, before it takes the next.
//
// Lifecycle: start() launches the threads; they run until stop is requested,
// finishing the batches in hand. ~Worker() joins the slots' threads first,
// before the inbox, the outside threads and each slot's keeper and protocol go.
#include <algorithm>
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
#include "protocol/handler_registry.hpp"
#include "protocol/steps/hand_back.hpp"
#include "runtime/batch_protocol.hpp"
#include "scheduling/worker_inbox.hpp"
#include "sessions/lease_keeper.hpp"

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
    // The process's, renewing the claims of every worker's batches. Outlives the worker.
    LeaseRenewer& lease_renewer;
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
    // The batches in hand also make no more calls outside their transaction
    // (OutsideWork::abandon_calls): what they have not called is put back.
    void abandon_leases() {
        for (auto& slot : slots_) slot->leases.abandon();
        if (outside_) outside_->abandon_calls();
    }
    // True while the worker's dependencies answered on their last use, its
    // handlers prepared, and none of its lanes is stalled.
    // Thread-safe.
    bool healthy() const;
    // Since when the worker runs the oldest batch in hand; nullopt while it
    // waits for records. Thread-safe.
    std::optional<std::chrono::steady_clock::time_point> busy_since() const;
    // Whether Redis / PostgreSQL answered on this worker's last use of them.
    // Thread-safe.
    bool redis_up() const;
    bool postgres_up() const;

private:
    using Rep = std::chrono::steady_clock::rep;
    static constexpr Rep kIdle = -1;

    // One of the worker's batches in flight (pipeline.concurrency of them): a
    // thread, its protocol (its own Redis and PostgreSQL sessions and handler
    // instances) and the keeper of its batch's claims, renewed by the process's
    // renewer under the slot's own owner id, since a claim is re-entrant for its
    // owner. Members are
    // destroyed bottom up: the thread is joined before what it uses goes.
    struct Slot {
        Slot(const WorkerContext& ctx, const std::string& owner,
             const std::shared_ptr<spdlog::logger>& log)
            : owner(owner),
              protocol(ctx.config, ctx.handlers, ctx.dead_letter_producer, ctx.stats,
                       ctx.failpoints, owner, *log, ctx.outbox_doorbell),
              leases(ctx.lease_renewer, owner) {}
        std::string owner;
        BatchProtocol protocol;
        LeaseKeeper leases;
        std::atomic<Rep> busy_since{kIdle};  // since its batch was taken; kIdle: none
        std::jthread thread;
    };

    void run(std::stop_token stop, Slot& slot);  // take a batch, run it, again
    // Keys, claims, the transaction step, then settle and hand back (one batch).
    void run_batch(Slot& slot, WorkerInbox::Taken taken);
    // hand_back(); a broken precondition (a record without a final fate, a bug)
    // is logged with the batch's coordinates and aborts the process.
    HandBack hand_back_or_abort(Batch& batch);

    WorkerContext ctx_;
    std::string owner_;
    std::shared_ptr<spdlog::logger> log_;
    WorkerInbox inbox_;
    // Handlers' work outside the transaction, shared by the slots; null when
    // no bound handler has any. Declared before slots_: their protocols use it.
    std::unique_ptr<OutsideWork> outside_;
    std::vector<std::unique_ptr<Slot>> slots_;
    // What the worker's latest batch to end saw, whichever slot ran it: a slot
    // that ran no batch since an outage must not keep reporting it.
    std::atomic<bool> healthy_{true};
    std::atomic<bool> redis_up_{true};
    std::atomic<bool> postgres_up_{true};
};

}  // namespace exo
