#pragma once
// One pipeline worker: a thread with its own Redis and PostgreSQL connections
// and its own handler instances, running the protocol of docs/design.md
// section 5 on batches taken from its inbox: key -> claim (one pipelined round
// trip) -> one transaction (dedup row, sequence check, handler per record) ->
// commit -> complete claims (one round trip) -> dead letters -> report finished
// offsets.
//
// Every record leaves a batch with a fate, and every failure is bounded (the
// failure matrix, docs/design.md section 6): a record's own failures and the
// failures of steps around it (SAVEPOINT, COMMIT) count as its attempts; only
// dependency outages (Redis, PostgreSQL unreachable) and a handler that cannot
// prepare pause without counting, loudly (not healthy). A record that cannot
// be recorded even as a dead letter stalls its partition, loudly.
//
// Lifecycle: start() launches the thread; it runs until the stop token is
// requested, finishing the batch in hand. Connections are opened lazily and
// reopened with backoff after failures, so a dependency down at start-up
// pauses the worker instead of failing the process.
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <exo/batch_handler.hpp>
#include "config/config.hpp"
#include "core/backoff.hpp"
#include "core/failpoints.hpp"
#include "kafka/producer.hpp"
#include "metrics/pipeline_stats.hpp"
#include "pipeline/batch_item.hpp"
#include "pipeline/dead_letter_publisher.hpp"
#include "pipeline/failure_matrix.hpp"
#include "pipeline/handler_registry.hpp"
#include "pipeline/lease_keeper.hpp"
#include "pipeline/postgres_session.hpp"
#include "pipeline/redis_session.hpp"
#include "pipeline/worker_inbox.hpp"
#include "redis/claim_store.hpp"

namespace exo {

struct FinishedOffset {
    TopicPartition partition;
    Offset offset;
};

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
    void run_batch(std::vector<PendingRecord> batch);

    // Steps of one batch; each leaves every item with a fate.
    void prepare_items(std::deque<BatchItem>& items);
    void claim_step(std::deque<BatchItem>& items);
    void transaction_step(std::deque<BatchItem>& items);
    // The records `group` (indices into items, in partition order) in one
    // transaction: first optimistically, without savepoints; if a record fails,
    // again with a savepoint per record so the failure rolls back alone; if the
    // COMMIT itself fails, each record once more in a transaction of its own.
    void run_group(std::deque<BatchItem>& items, const std::vector<std::size_t>& group);
    // One transaction over the pending items of `group`. `careful`: a savepoint
    // per record. Returns false, with the transaction rolled back, when it did
    // not commit: in the optimistic pass as soon as a record fails; in either
    // pass when COMMIT fails for a reason that is not a lost connection
    // (`why` says which). A lost connection throws.
    // A batch handler that named the record it failed on (BatchRecordFailed).
    struct Blame {
        std::size_t index;  // into items
        Failure failure;
        std::string why;
    };
    // `blame` (optimistic pass only): set when it failed because a batch
    // handler named a record; run_group then takes that record out and runs
    // the rest optimistically again instead of carefully.
    bool run_transaction(std::deque<BatchItem>& items, const std::vector<std::size_t>& group,
                         bool careful, std::string& why, std::optional<Blame>* blame = nullptr);
    // One handle_batch() call over `batch` (indices into items: a run of
    // consecutive records of one binding in the group's order; their framework
    // SQL done set-based). Finishes them as
    // applied, or returns false with the transaction to be rolled back:
    // `blame` set when the handler named the bad record. Throws what pauses
    // the worker.
    bool run_batch_handler(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                           const std::vector<std::size_t>& batch, std::string& why,
                           std::optional<Blame>& blame);
    // The optimistic pass's framework SQL for every pending record of `group`
    // at once (pg/group_start.hpp): duplicates, stale records and gaps get
    // their fate, records to apply are marked framework_started. Returns false
    // (with `why`) when it failed or a concurrent transaction created an entity
    // of the group: the caller rolls back and runs the group carefully. Throws
    // what pauses the worker (PostgreSQL down).
    bool start_group_set_based(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                               const std::vector<std::size_t>& group, std::string& why);
    // The careful pass locks the group's existing entities first, sorted, as
    // the set-based start does: per-record statements then never lock two
    // entities in an order that crosses another transaction's.
    void lock_group_entities(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                             const std::vector<std::size_t>& group);
    // A strict-sequence gap that may still be filled: parked, at most 1 s.
    void park_for_gap(BatchItem& item, const std::string& entity);
    // Returns false only in the optimistic pass, when the record failed.
    bool run_one(pqxx::transaction_base& tx, BatchItem& item, std::deque<BatchItem>& items,
                 std::size_t index, bool careful);
    // run_one's answer to a failed record step: in the optimistic pass, false
    // (the whole transaction rolls back); in the careful pass the record rolls
    // back alone and the failure matrix decides.
    bool record_step_failed(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                            std::size_t index, bool careful, Failure failure,
                            const std::string& why);
    // Careful pass: the savepoint before the record at `index` (or after the
    // last record), blaming `previous` if its handler left the transaction aborted.
    void savepoint(pqxx::transaction_base& tx, const char* statement, std::deque<BatchItem>& items,
                   std::optional<std::size_t> previous);
    void complete_step(std::deque<BatchItem>& items);
    void release_step(std::deque<BatchItem>& items);
    void hand_back(std::deque<BatchItem>& items);

    // The failure matrix's answers for one record.
    void record_failed(std::deque<BatchItem>& items, std::size_t index, Failure failure,
                       const std::string& why);
    void record_contended(std::deque<BatchItem>& items, std::size_t index, const std::string& why);
    // A failure of the whole batch (a dependency, a handler's prepare(), a step
    // outside every record's own): requeue or count, per the failure's kind.
    void batch_failed(std::deque<BatchItem>& items, const std::exception& e);

    // Requeues later pending items of the same partition: order is per partition.
    static std::vector<TokenRequest> open_claims(const std::deque<BatchItem>& items);
    void hold_rest_of_partition(std::deque<BatchItem>& items, std::size_t index);
    std::chrono::milliseconds retry_delay(int attempt);

    // Every binding's handler prepares its statements on a new connection.
    void prepare_handlers(pqxx::connection& connection);

    const BindingConfig* binding_for(const std::string& topic) const;

    int index_;
    WorkerContext ctx_;
    std::string owner_;
    Backoff backoff_;
    std::mt19937_64 rng_;
    std::shared_ptr<spdlog::logger> log_;
    std::map<std::string, std::unique_ptr<Handler>> handlers_;  // by binding topic
    std::map<std::string, BatchHandler*> batch_handlers_;       // those that are, by topic

    RedisSession redis_;
    PostgresSession postgres_;
    DeadLetterPublisher dead_letters_;  // after the sessions it uses
    std::atomic<bool> healthy_{true};
    int dependency_failures_ = 0;  // batches in a row a handler's DependencyError put back
    static constexpr std::chrono::steady_clock::rep kIdle = -1;
    std::atomic<std::chrono::steady_clock::rep> busy_since_{kIdle};
    std::atomic<bool> redis_up_{true};
    std::atomic<bool> postgres_up_{true};  // set from the poll thread, for the batch in hand

    WorkerInbox inbox_;
    LeaseKeeper lease_keeper_;
    std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace exo
