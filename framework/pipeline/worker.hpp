#pragma once
// One pipeline worker: a thread with its own Redis and PostgreSQL connections
// and its own handler instances, running DESIGN.md section 5 on batches taken
// from its inbox: key -> claim (one pipelined round trip) -> one transaction
// with a savepoint per record (dedup row, sequence check, handler) -> commit ->
// complete claims (one round trip) -> dead letters -> report finished offsets.
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

#include "config/config.hpp"
#include "core/backoff.hpp"
#include "kafka/producer.hpp"
#include "pipeline/batch_item.hpp"
#include "pipeline/failpoints.hpp"
#include "pipeline/handler_registry.hpp"
#include "pipeline/lease_keeper.hpp"
#include "pipeline/pipeline_stats.hpp"
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
    void abandon_leases() { lease_keeper_.clear(); }
    // True while the worker's dependencies answered on their last use.
    bool healthy() const { return healthy_.load(); }

private:
    void run(std::stop_token stop);
    void run_batch(std::vector<PendingRecord> batch);

    // Steps of one batch; each leaves every item with a fate.
    void prepare_items(std::deque<BatchItem>& items);
    void claim_step(std::deque<BatchItem>& items);
    void transaction_step(std::deque<BatchItem>& items);
    // One transaction over the pending items. `careful`: a savepoint per record,
    // so a failing record rolls back alone. Otherwise none (two round trips per
    // record fewer); returns false, with the transaction aborted, as soon as a
    // record fails, and the caller re-runs the batch carefully.
    bool run_transaction(std::deque<BatchItem>& items, const std::vector<std::size_t>& pending,
                         bool careful);
    // Returns false only in the optimistic pass, when the record failed.
    bool run_one(pqxx::transaction_base& tx, BatchItem& item, std::deque<BatchItem>& items,
                 std::size_t index, bool careful);
    void complete_step(std::deque<BatchItem>& items);
    void dead_letter_step(std::deque<BatchItem>& items);
    void release_step(std::deque<BatchItem>& items);
    void hand_back(std::deque<BatchItem>& items);

    // Requeues later pending items of the same partition: order is per partition.
    static std::vector<TokenRequest> open_claims(const std::deque<BatchItem>& items);
    void hold_rest_of_partition(std::deque<BatchItem>& items, std::size_t index);
    std::chrono::milliseconds retry_delay(int attempt);

    // Worker 0 deletes dedup rows past postgres.dedup_retention, a chunk at a
    // time between batches, at start and every 10 minutes.
    void prune_if_due();

    bool claims_available();       // connects to Redis if needed; false if down
    pqxx::connection& postgres();  // connects if needed; throws on failure
    void drop_postgres();

    const BindingConfig* binding_for(const std::string& topic) const;

    int index_;
    WorkerContext ctx_;
    std::string owner_;
    Backoff backoff_;
    std::mt19937_64 rng_;
    std::shared_ptr<spdlog::logger> log_;
    std::map<std::string, std::unique_ptr<Handler>> handlers_;  // by handler name

    // Its own, so a delivery failure reported during one worker's flush can never
    // be taken for (or hidden from) another worker's dead letters.
    KafkaProducer dead_letters_;
    std::optional<RedisConnection> redis_;
    std::optional<ClaimStore> claims_;
    std::chrono::steady_clock::time_point redis_retry_at_{};
    int redis_failures_ = 0;
    bool redis_down_logged_ = false;
    std::unique_ptr<pqxx::connection> pg_;
    int pg_failures_ = 0;
    int other_failures_ = 0;  // batch failures of neither Redis nor PostgreSQL (e.g. the DLQ)
    bool pg_down_logged_ = false;
    std::chrono::steady_clock::time_point next_prune_{};
    std::atomic<bool> healthy_{true};

    WorkerInbox inbox_;
    LeaseKeeper lease_keeper_;
    std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace exo
