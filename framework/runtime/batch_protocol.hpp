#pragma once
// The protocol of docs/design.md#per-record for one worker's batches, pass by
// pass: keys, claims, the transaction step, then complete, dead letters,
// release. It owns what the passes use: the worker's Redis and PostgreSQL
// sessions, its handler instances, its dead-letter producer and the fate
// policy. The worker owns the thread, the inbox, the health and the leases.
//
// Every record leaves a batch with a fate, and every failure is bounded (the
// failure matrix, docs/design.md#failure-matrix): a record's own failures and the
// failures of steps around it (SAVEPOINT, COMMIT) count as its attempts; only
// dependency outages (Redis, PostgreSQL unreachable) and a handler that cannot
// prepare pause without counting, loudly (not healthy). A record that cannot
// be recorded even as a dead letter stalls its partition, loudly.
//
// Connections are opened when the worker starts (open_sessions) and reopened
// with backoff after failures, so a dependency down at start-up pauses the
// worker instead of failing the process.
//
// Thread-safety: none; one thread (its worker slot's) runs every batch of a
// protocol, prepare() to settle(), one batch after another.
#include <atomic>
#include <string>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "kafka/producer.hpp"
#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/binding_handlers.hpp"
#include "protocol/dead_letter_publisher.hpp"
#include "protocol/fate_policy.hpp"
#include "protocol/handler_registry.hpp"
#include "protocol/steps/claims.hpp"
#include "protocol/steps/transaction_step.hpp"
#include "runtime/outside_work.hpp"
#include "runtime/sessions/lease_keeper.hpp"
#include "runtime/sessions/postgres_session.hpp"
#include "runtime/sessions/redis_session.hpp"

namespace exo {

// How a batch's keys, claims and transactions ended.
enum class BatchEnd {
    went_through,  // every record has its fate; what committed is durable
    failed,        // a step around the records failed: put back (counted, or a NACK)
    paused,        // a dependency is down or a handler cannot prepare: put back uncounted
};

class BatchProtocol {
public:
    // All references outlive the protocol, and `outbox_doorbell` (rung after a
    // COMMIT that emitted; nullptr: no relay in this process) too. Throws what
    // creating a handler or the dead-letter producer throws.
    BatchProtocol(const Config& config, const HandlerRegistry& registry,
                  const ProducerOptions& dead_letter_producer, PipelineStats& stats,
                  Failpoints& failpoints, const std::string& owner, spdlog::logger& log,
                  OutboxDoorbell* outbox_doorbell = nullptr);
    BatchProtocol(const BatchProtocol&) = delete;
    BatchProtocol& operator=(const BatchProtocol&) = delete;

    // Opens the PostgreSQL and Redis sessions before the first batch, as a pool
    // kept full would: with many slots, the first records would otherwise wait
    // while every slot forks, authenticates and prepares its PostgreSQL backend
    // at once. Never throws: a PostgreSQL failure here is left, uncounted, for
    // the first batch to meet and report; a Redis one is counted and logged as
    // that batch would.
    void open_sessions();
    // Whether a bound handler has work outside its transaction
    // (exo/outside_transaction.hpp), and where apply() runs it: the worker's
    // outside threads, set before the first batch (until then: this thread).
    bool has_outside_work() const { return handlers_.any_outside(); }
    void use_outside_threads(OutsideWork& work) { outside_ = &work; }
    // Sections 5.1 and 5.2: keys, then claims (held by `leases` from then on).
    // Never throws: a failure is the batch's (fate policy).
    BatchEnd prepare(Batch& batch, LeaseKeeper& leases);
    // Section 5.3, the transaction step, for a batch prepare() let through,
    // after its records' work outside the transaction (5.9; the claims of the
    // records that put back give back at once, and `leases` stops renewing
    // them). Never throws.
    BatchEnd apply(Batch& batch, LeaseKeeper& leases);
    // prepare() and, if it went through, apply().
    BatchEnd transact(Batch& batch, LeaseKeeper& leases);
    // Sections 5.4 and 5.6, whatever transact() answered: claims of settled
    // records completed, dead letters recorded, the other claims released,
    // then later copies of a key settled with their first copy (5.1).
    // Never throws.
    void settle(Batch& batch, LeaseKeeper& leases);

    // Whether Redis / PostgreSQL answered on their last use. From the
    // protocol's thread.
    bool redis_up() const { return redis_.failures() == 0; }
    bool postgres_up() const { return postgres_.failures() == 0; }

private:
    BatchEnd batch_failed(Batch& batch, const std::exception& e);

    const Config& config_;
    PipelineStats& stats_;
    Failpoints& failpoints_;
    spdlog::logger& log_;
    BindingHandlers handlers_;
    FatePolicy fate_;  // draws jitter: one per thread
    RedisSession redis_;
    Claims claims_;  // on redis_
    PostgresSession postgres_;
    DeadLetterPublisher dead_letters_;  // after the sessions it uses
    TransactionStep transactions_;
    OutsideWork on_this_thread_;               // no threads of its own
    OutsideWork* outside_ = &on_this_thread_;  // or the worker's, which outlives the protocol
    // Batches in a row a handler's DependencyError put back.
    int dependency_failures_ = 0;
};

}  // namespace exo
