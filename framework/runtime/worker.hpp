#pragma once
// The process's batch runners: one lane scheduler (the inbox) feeding
// pipeline.concurrency runners, each taking batches from it and running them
// through the protocol of docs/design.md#per-record (batch_protocol.hpp: keys,
// claims, transactions, complete, dead letters, release), then handing the
// records back: finished offsets to the daemon, the rest to the inbox. It owns
// the threads, the inbox, the one pool of outside-call threads, the pipeline's
// health and the leases of its batches.
//
// Every runner takes from the one inbox, so no runner idles while another
// holds the busy partitions. Each runs one batch at a time on its own thread
// with its own sessions. The inbox never gives two batches a common lane (a
// partition, or one ordering key of it), and finished offsets are committed
// below the lowest unfinished one, so lane order and the offsets hold
// whichever batch finishes first. A runner's thread runs each batch whole,
// keys and claims through release, before it takes the next.
//
// Lifecycle: start() launches the threads; they run until stop is requested,
// finishing the batches in hand. ~BatchRunners() joins the runners' threads
// first, before the inbox, the outside threads and each runner's keeper and
// protocol go.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
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
#include "runtime/sessions/lease_keeper.hpp"
#include "scheduling/worker_inbox.hpp"

namespace exo {

// What the runners need from the rest of the daemon. All references outlive them.
struct RunnersContext {
    const Config& config;
    const HandlerRegistry& handlers;
    ProducerOptions dead_letter_producer;  // each runner has its own producer
    PipelineStats& stats;
    Failpoints& failpoints;
    // Called from a runner's thread with offsets whose outcome is durable.
    std::function<void(const std::vector<FinishedOffset>&)> on_finished;
    // Unique per process: runner owners are <prefix>/r<index>, unique per runner
    // (a claim is re-entrant for its owner: runners must never share one).
    std::string owner_prefix;
    // The process's, renewing the claims of every runner's batches. Outlives them.
    LeaseRenewer& lease_renewer;
    // The relay's, rung after a COMMIT that emitted; nullptr: no relay in this
    // process. Outlives the runners.
    OutboxDoorbell* outbox_doorbell = nullptr;
};

class BatchRunners {
public:
    explicit BatchRunners(RunnersContext context);
    BatchRunners(const BatchRunners&) = delete;
    BatchRunners& operator=(const BatchRunners&) = delete;
    ~BatchRunners();  // requests stop and joins

    WorkerInbox& inbox() { return inbox_; }
    void start();
    void request_stop();
    void join();
    // Stops renewing the claims of the batches in hand: called when a revoke's
    // drain deadline passed, so the partition's new owner can take the claims
    // over after one lease instead of waiting for this batch (PostgreSQL then
    // decides which transaction wins).
    // Sticks until the keeper's next batch: the runner's own hold() after its
    // claim step cannot undo it (LeaseKeeper says how). Thread-safe.
    // Only the runners whose batch holds a lane of `partitions` abandon theirs
    // (a revoke's drain must not abandon the claims of other partitions'
    // batches); those batches also make no more calls outside their
    // transaction (OutsideWork::abandon_calls): what they have not called is
    // put back.
    void abandon_leases(const std::vector<TopicPartition>& partitions);
    // True while the dependencies answered on their last use by the latest
    // batch to end, the handlers prepared, and no lane is stalled.
    // Thread-safe.
    bool healthy() const;
    // Runners: pipeline.concurrency.
    std::size_t runners() const { return slots_.size(); }
    // Since when runner `index` runs its batch in hand; nullopt while it waits
    // for records. Thread-safe.
    std::optional<std::chrono::steady_clock::time_point> busy_since(std::size_t index) const;
    // Whether Redis / PostgreSQL answered on the latest batch's use of them.
    // Thread-safe.
    bool redis_up() const;
    bool postgres_up() const;

private:
    using Rep = std::chrono::steady_clock::rep;
    static constexpr Rep kIdle = -1;

    // One batch runner (pipeline.concurrency of them): a thread, its protocol
    // (its own Redis and PostgreSQL sessions and handler instances) and the
    // keeper of its batch's claims, renewed by the process's renewer under the
    // runner's own owner id, since a claim is re-entrant for its owner. Members
    // are destroyed bottom up: the thread is joined before what it uses goes.
    struct Slot {
        Slot(const RunnersContext& ctx, const std::string& owner,
             const std::shared_ptr<spdlog::logger>& log)
            : owner(owner),
              protocol(ctx.config, ctx.handlers, ctx.dead_letter_producer, ctx.stats,
                       ctx.failpoints, owner, *log, ctx.outbox_doorbell),
              leases(ctx.lease_renewer, owner) {}
        std::string owner;
        BatchProtocol protocol;
        LeaseKeeper leases;
        std::atomic<Rep> busy_since{kIdle};  // since its batch was taken; kIdle: none
        // The partitions of the batch in hand (empty: none); guarded by
        // partitions_mutex, for abandon_leases() from the poll thread.
        std::mutex partitions_mutex;
        std::set<TopicPartition> partitions;
        std::jthread thread;
    };

    void run(std::stop_token stop, Slot& slot);  // take a batch, run it, again
    // Keys, claims, the transaction step, then settle and hand back (one batch).
    void run_batch(Slot& slot, WorkerInbox::Taken taken);
    // hand_back(); a broken precondition (a record without a final fate, a bug)
    // is logged with the batch's coordinates and aborts the process.
    HandBack hand_back_or_abort(Batch& batch);

    RunnersContext ctx_;
    std::shared_ptr<spdlog::logger> log_;
    WorkerInbox inbox_;
    // Handlers' work outside the transaction, shared by the slots; null when
    // no bound handler has any. Declared before slots_: their protocols use it.
    std::unique_ptr<OutsideWork> outside_;
    std::vector<std::unique_ptr<Slot>> slots_;
    // What the latest batch to end saw, whichever runner ran it: a runner that
    // ran no batch since an outage must not keep reporting it.
    std::atomic<bool> healthy_{true};
    std::atomic<bool> redis_up_{true};
    std::atomic<bool> postgres_up_{true};
};

}  // namespace exo
