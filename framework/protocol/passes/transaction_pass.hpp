#pragma once
// What the optimistic and the careful pass (docs/design.md#transaction) share:
// what they need, how they end, one record's part in the transaction, and the
// COMMIT. Neither pass needs Redis or Kafka: records carry their Redis token
// if they have one (token 0 otherwise), so the passes run against PostgreSQL
// alone (integration/transaction_passes_test.cpp).
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>
#include <pqxx/transaction_base>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "metrics/pipeline_stats.hpp"
#include "outbox/outbox_doorbell.hpp"
#include "outbox/transaction_outbox.hpp"
#include "pg/explicit_transaction.hpp"
#include "protocol/batch.hpp"
#include "protocol/binding_handlers.hpp"
#include "protocol/failure_matrix.hpp"
#include "protocol/fate_policy.hpp"
#include "protocol/passes/retry_ladder.hpp"
#include "protocol/record_in_transaction.hpp"

namespace exo {

// What a pass needs; every reference outlives the pass.
struct PassContext {
    // kafka.group_id: the namespace of the dedup rows, sequences and outbox rows.
    const std::string& group;
    // The largest record emit() accepts per topic (outbox.emit_limits).
    const EmitLimits& emit_limits;
    FrameworkSql framework_sql;  // pipeline.framework_sql (a benchmark seam)
    const BindingHandlers& handlers;
    PipelineStats& stats;
    spdlog::logger& log;
    FatePolicy& fate;
    // Rung after a COMMIT whose transaction emitted, so this process's relay
    // publishes at once; nullptr: no relay here (outbox.enabled false, tests).
    OutboxDoorbell* outbox_doorbell = nullptr;
    // The process's failpoints (tests: pg_commit_probe); nullptr: none.
    Failpoints* failpoints = nullptr;
};

// A batch handler said which record it failed on (BatchRecordFailed).
struct NamedFailure {
    BatchRecord* record;
    Failure failure;
    std::string why;
};

// How a pass ended. Not committed: the transaction was rolled back and `why`
// says why; the verdicts the pass took are the caller's to forget.
struct PassResult {
    Rung rung = Rung::optimistic;  // the attempt's (AttemptExecutor::run)
    bool committed = false;
    std::string why;
    // The optimistic pass only: a batch handler named the record it failed on,
    // so the records can run optimistically again without it.
    std::optional<NamedFailure> named;
    // The optimistic pass only: records whose before_transaction() threw
    // (exo/outside_transaction.hpp), known before BEGIN and failed here all at
    // once, once the set-based start had decided they were still to apply.
    std::vector<NamedFailure> outside_failed;
    // The optimistic pass only, committed or not: records whose sequence entity
    // another transaction held locked (Failure::contention), left out of the
    // transaction without waiting for the lock. The pass put them back, and the
    // records of their lanes behind them, uncounted (put_back_held); the caller
    // NACKs them (FatePolicy::record_failed), once, after it forgot a
    // rolled-back pass's verdicts.
    std::vector<NamedFailure> entity_held;
    // The records that were pending when the attempt started: what a
    // rolled-back attempt's verdicts are forgotten for (AttemptExecutor).
    TransactionRecords ran;

    static PassResult done() { return {Rung::optimistic, true, {}, std::nullopt, {}, {}, {}}; }
    static PassResult rolled_back(std::string why,
                                  std::optional<NamedFailure> named = std::nullopt) {
        return {Rung::optimistic, false, std::move(why), std::move(named), {}, {}, {}};
    }
};

// A record's own step failed; the record is still pending, and what the
// failure costs is the pass's to decide.
struct RecordFailure {
    Failure failure;
    std::string why;
};

// The one place where a failure thrown in an attempt becomes a value: what
// `thrown` (a handler's, PostgreSQL's in a record's part of the pass or around the
// records, the outside work's) means, and why, as logs and dead letters say it.
// `handler`: whose code ran, blamed when it swallowed a database error or threw
// something that is no std::exception; empty for the framework's own
// statements (their message says why). Rethrows what pauses the worker
// (pauses_the_worker): the whole batch waits for the dependency.
RecordFailure failure_of(const std::exception_ptr& thrown, const std::string& handler = {});

// One record's part in the transaction (protocol/record_in_transaction.hpp), its answer
// made the record's fate: finished, parked for a gap, or a dead letter. A
// record whose set-based start is done runs only its handler; its emits go to
// `outbox`. Throws what pauses the worker (pauses_the_worker); any other
// failure is returned.
std::optional<RecordFailure> run_record(const PassContext& ctx, pqxx::transaction_base& tx,
                                        BatchRecord& record, GapUndo undo,
                                        TransactionOutbox& outbox);

// The emits `outbox` gathered, then COMMIT: whatever the transaction decided
// for `records` is durable after it, and the relay's doorbell rings if it
// emitted. A failure of either but a lost connection (which throws: the
// outcome is unknown) is returned, with the transaction rolled back: the
// gathered emits' statement names no record (a key's lock wait, a deadlock, a
// handler that swallowed a database error), so the careful pass writes each
// record's alone.
PassResult commit_records(const PassContext& ctx, ExplicitTransaction& transaction,
                          const TransactionRecords& records, TransactionOutbox& outbox);

// ROLLBACK, and the result that says why.
PassResult roll_back(ExplicitTransaction& transaction, PipelineStats& stats, std::string why,
                     std::optional<NamedFailure> named = std::nullopt);

}  // namespace exo
