#pragma once
// The protocol of docs/design.md section 5 for one worker's batches, pass by
// pass: keys, claims, the transaction step, then complete, dead letters,
// release. It owns what the passes use: the worker's Redis and PostgreSQL
// sessions, its handler instances, its dead-letter producer and the fate
// policy. The worker owns the thread, the inbox, the health and the leases.
//
// Every record leaves a batch with a fate, and every failure is bounded (the
// failure matrix, docs/design.md section 6): a record's own failures and the
// failures of steps around it (SAVEPOINT, COMMIT) count as its attempts; only
// dependency outages (Redis, PostgreSQL unreachable) and a handler that cannot
// prepare pause without counting, loudly (not healthy). A record that cannot
// be recorded even as a dead letter stalls its partition, loudly.
//
// Connections are opened lazily and reopened with backoff after failures, so a
// dependency down at start-up pauses the worker instead of failing the process.
//
// Thread-safety: none; the worker's thread only.
#include <string>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "kafka/producer.hpp"
#include "metrics/pipeline_stats.hpp"
#include "pipeline/batch.hpp"
#include "pipeline/binding_handlers.hpp"
#include "pipeline/dead_letter_publisher.hpp"
#include "pipeline/handler_registry.hpp"
#include "pipeline/lease_keeper.hpp"
#include "pipeline/passes/claims.hpp"
#include "pipeline/passes/fate_policy.hpp"
#include "pipeline/passes/transaction_step.hpp"
#include "pipeline/postgres_session.hpp"
#include "pipeline/redis_session.hpp"

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

    // Sections 5.1 to 5.3: keys, claims (held by `leases` from then on), the
    // transaction step. Never throws: a failure is the batch's (fate policy).
    BatchEnd transact(Batch& batch, LeaseKeeper& leases);
    // Sections 5.4 and 5.6, whatever transact() answered: claims of settled
    // records completed, dead letters recorded, the other claims released,
    // then later copies of a key settled with their first copy (5.1).
    // Never throws.
    void settle(Batch& batch, LeaseKeeper& leases);

    // Whether Redis / PostgreSQL answered on their last use.
    bool redis_up() const { return redis_.failures() == 0; }
    bool postgres_up() const { return postgres_.failures() == 0; }

private:
    BatchEnd batch_failed(Batch& batch, const std::exception& e);

    const Config& config_;
    PipelineStats& stats_;
    Failpoints& failpoints_;
    spdlog::logger& log_;
    FatePolicy fate_;
    BindingHandlers handlers_;
    RedisSession redis_;
    PostgresSession postgres_;
    DeadLetterPublisher dead_letters_;  // after the sessions it uses
    Claims claims_;
    TransactionStep transactions_;
    int dependency_failures_ = 0;  // batches in a row a handler's DependencyError put back
};

}  // namespace exo
