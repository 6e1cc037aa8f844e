#include "pipeline/worker.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <pqxx/pqxx>
#include <unordered_set>

#include <exo/errors.hpp>
#include "core/key_derivation.hpp"
#include "core/log_context.hpp"
#include "core/text.hpp"
#include "outbox/outbox_writer.hpp"
#include "pg/batch_transaction.hpp"
#include "pg/framework_statements.hpp"
#include "pg/group_start.hpp"
#include "pg/pg_errors.hpp"
#include "pg/session.hpp"
#include "pipeline/dead_letter.hpp"
#include "pipeline/failure_matrix.hpp"
#include "pipeline/record_step.hpp"
#include "redis/redis_error.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Issued before each record; the release of the previous record's savepoint
// rides in the same round trip. The last one is released before COMMIT, which
// is where a swallowed error of the last record's handler shows.
constexpr const char* kFirstSavepoint = "SAVEPOINT exo_record";
constexpr const char* kNextSavepoint = "RELEASE SAVEPOINT exo_record; SAVEPOINT exo_record";
constexpr const char* kReleaseSavepoint = "RELEASE SAVEPOINT exo_record";
// How many records batch handlers may name in one group before it runs carefully.
constexpr int kMaxExclusions = 8;

// The record's Kafka timestamp (producer or broker time) to now, when it has one.
std::optional<std::chrono::microseconds> since_produced(const Record& record,
                                                        std::chrono::system_clock::time_point now) {
    if (record.timestamp_ms < 0) return std::nullopt;
    const auto produced =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(record.timestamp_ms));
    return std::chrono::duration_cast<std::chrono::microseconds>(now - produced);
}

std::shared_ptr<spdlog::logger> worker_logger(int index) {
    auto name = "worker-" + std::to_string(index);
    if (auto existing = spdlog::get(name)) return existing;
    auto logger = spdlog::default_logger()->clone(name);
    return logger;
}

}  // namespace

Worker::Worker(int index, WorkerContext context)
    : index_(index),
      ctx_(std::move(context)),
      owner_(ctx_.owner_prefix + "/w" + std::to_string(index)),
      backoff_{ctx_.config.pipeline.retry_backoff_initial, ctx_.config.pipeline.retry_backoff_max},
      rng_(std::random_device{}()),
      log_(worker_logger(index)),
      redis_(ctx_.config, owner_, *log_, [this](int failures) { return retry_delay(failures); }),
      postgres_(
          ctx_.config.postgres, [this](pqxx::connection& c) { prepare_handlers(c); }, *log_),
      dead_letters_(ctx_.config, ctx_.dead_letter_producer, ctx_.stats, *log_, postgres_, redis_,
                    [this](int failures) { return retry_delay(failures); }),
      lease_keeper_(ctx_.config, owner_, ctx_.stats, log_) {
    // One handler per binding: bindings that share a handler class may differ in options.
    for (const auto& b : ctx_.config.bindings) {
        auto handler = ctx_.handlers.create(b.handler, b.options);
        if (auto* batch = dynamic_cast<BatchHandler*>(handler.get()))
            batch_handlers_.emplace(b.topic, batch);
        handlers_.emplace(b.topic, std::move(handler));
    }
}

Worker::~Worker() {
    request_stop();
    join();
}

void Worker::start() {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Worker::join() {
    if (thread_.joinable()) thread_.join();
}

const BindingConfig* Worker::binding_for(const std::string& topic) const {
    for (const auto& b : ctx_.config.bindings)
        if (b.topic == topic) return &b;
    return nullptr;
}

milliseconds Worker::retry_delay(int attempt) {
    return backoff_.delay(attempt, std::uniform_real_distribution<double>(0, 1)(rng_));
}

void Worker::run(std::stop_token stop) {
    const auto& p = ctx_.config.pipeline;
    while (!stop.stop_requested()) {
        auto batch = inbox_.take_batch(static_cast<std::size_t>(p.batch_size), p.linger, stop);
        if (batch.empty()) continue;
        busy_since_ = Clock::now().time_since_epoch().count();
        run_batch(std::move(batch));
        busy_since_ = kIdle;
        redis_up_ = redis_.failures() == 0;
        postgres_up_ = postgres_.failures() == 0;
    }
}

void Worker::run_batch(std::vector<PendingRecord> batch) {
    std::deque<BatchItem> items;  // a deque never moves its elements: they point into themselves
    for (auto& r : batch) items.emplace_back(std::move(r));
    ctx_.stats.batches++;

    lease_keeper_.start_batch();
    bool committed = false;
    try {
        prepare_items(items);
        claim_step(items);
        ctx_.failpoints.hit("after_claim");
        lease_keeper_.hold(open_claims(items));
        transaction_step(items);
        committed = true;
    } catch (const std::exception& e) {
        batch_failed(items, e);
    } catch (...) {
        // Nothing exo throws gets here; a handler's foreign exception escaping a
        // step must not end the worker thread (and the process) all the same.
        batch_failed(items, std::runtime_error("an exception that is not a std::exception"));
    }
    if (committed) {
        ctx_.failpoints.hit("after_pg_commit");
        healthy_ = true;
        dependency_failures_ = 0;
        postgres_.answered();
    }
    // What a committed transaction settled is completed even when a later group
    // of the batch failed (batch_failed leaves it alone).
    complete_step(items);
    // Completed claims need no renewal; abandoned ones (a revoke's deadline
    // passed) are not renewed again: the keeper ignores this hold() then.
    lease_keeper_.hold(open_claims(items));
    // Dead letters decided before a failure (a bad key, a record out of attempts)
    // are recorded whatever happened to the rest of the batch.
    dead_letters_.publish(items);
    lease_keeper_.clear();
    // A batch in hand is always finished, even when stopping: its claims and offsets settle.
    release_step(items);
    hand_back(items);
}

void Worker::batch_failed(std::deque<BatchItem>& items, const std::exception& e) {
    ctx_.stats.batch_failures++;
    const Failure failure = classify(e);
    const bool prepare_failed = failure == Failure::handler_unprepared;
    const bool pg_gone = failure == Failure::postgres_down;
    if (pg_gone || prepare_failed) postgres_.drop();
    // A dependency down, or a handler that cannot prepare, is nobody's record's
    // fault: everything waits, uncounted, and the worker says it is not healthy.
    // Anything else failed around the records of the transaction (a SAVEPOINT,
    // a ROLLBACK TO): it counts as an attempt of each of them.
    const bool counted = counts_as_attempt(failure);
    std::chrono::milliseconds delay = retry_delay(1);
    if (pg_gone) delay = retry_delay(postgres_.failed());
    if (failure == Failure::redis_down) delay = retry_delay(std::max(1, redis_.failures()));
    if (failure == Failure::dependency_down) delay = retry_delay(++dependency_failures_);
    if (prepare_failed) delay = ctx_.config.pipeline.retry_backoff_max;
    if (pauses_the_worker(failure)) healthy_ = false;

    const std::string why = printable_text(e.what());
    if (prepare_failed) {
        if (!postgres_.prepare_failing())
            log_->error(
                "{}; {} records wait and the worker reports not ready until it succeeds "
                "(retried every {} ms)",
                why, items.size(), delay.count());
        postgres_.mark_prepare_failing();
    } else if (!pg_gone || !postgres_.outage_logged()) {
        // Once per outage, not once per retry: an operator needs the state change.
        log_->warn("batch of {} put back ({}): {}", items.size(),
                   counted                          ? "counted as an attempt of its records"
                   : failure == Failure::contention ? "a lock held elsewhere, uncounted"
                                                    : "dependency down",
                   why);
    }
    if (pg_gone) postgres_.mark_outage_logged();

    for (auto& item : items) {
        if (!item.in_transaction || item.committed) {
            // Settled before the transaction (a Redis duplicate, a bad key, a
            // CONFLICT): those answers stand.
            if (item.fate == Fate::pending) item.requeue(delay, why);
            continue;
        }
        item.reset_to_pending();
        if (!counted) {
            item.requeue(delay, why);
            continue;
        }
        const int attempts = ++item.pending.attempts;
        if (decide_batch_failure(failure, attempts, item.binding->max_attempts) ==
            Action::dead_letter) {
            item.dead_letter("gave up after " + std::to_string(attempts) + " attempts: " + why);
        } else {
            ctx_.stats.retries++;
            item.requeue(retry_delay(attempts), why);
        }
    }
}

void Worker::prepare_items(std::deque<BatchItem>& items) {
    std::unordered_set<std::string> keys_in_batch;
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto& item = items[i];
        if (item.fate != Fate::pending) continue;
        item.binding = binding_for(item.pending.record.topic.value);
        if (item.binding == nullptr) {
            // Subscribed topics come from the bindings, so this is a bug, not bad input.
            item.requeue(retry_delay(1), "no binding for topic " + item.pending.record.topic.value);
            hold_rest_of_partition(items, i);
            continue;
        }
        try {
            item.key = derive_idempotency_key(item.binding->key, item.pending.record, item.payload);
        } catch (const PermanentError& e) {
            // No storable key: nothing to claim or record, so such a dead letter
            // is at-least-once (a redelivery before the offset commits repeats it).
            item.dead_letter(e.what(), /*record_key=*/false);
            continue;
        }
        // One claim per key per batch: a repeated key waits for the next batch,
        // where it will be a duplicate of this one.
        if (!keys_in_batch.insert(item.key).second) {
            item.requeue(milliseconds(0), "same key earlier in the batch");
            hold_rest_of_partition(items, i);
        }
    }
}

void Worker::claim_step(std::deque<BatchItem>& items) {
    std::vector<std::size_t> idx;
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < items.size(); ++i)
        if (items[i].fate == Fate::pending) {
            idx.push_back(i);
            keys.push_back(items[i].key);
        }
    if (keys.empty()) return;
    ClaimStore* claims = redis_.claims();
    if (claims == nullptr) {
        if (ctx_.config.pipeline.on_redis_down == RedisDownPolicy::postgres_only) return;
        throw RedisIoError("Redis is unreachable (on_redis_down: pause)");
    }
    std::vector<ClaimResult> results;
    try {
        auto before = redis_.round_trips();
        results = claims->claim(keys, ctx_.config.claim.lease);
        ctx_.stats.redis_round_trips += redis_.round_trips() - before;
    } catch (const RedisError& e) {
        // A whole call failed (claim() gave back what the other calls acquired):
        // an outage. Only a closed connection is dropped.
        redis_.failed();
        if (ctx_.config.pipeline.on_redis_down == RedisDownPolicy::postgres_only) {
            log_->warn("Redis failed ({}); continuing on the PostgreSQL dedup row alone", e.what());
            return;
        }
        throw;
    }
    redis_.answered();
    for (std::size_t n = 0; n < idx.size(); ++n) {
        auto& item = items[idx[n]];
        const auto& r = results[n];
        switch (r.status) {
            case ClaimStatus::acquired:
            case ClaimStatus::taken_over:
                item.token = r.token;
                break;
            case ClaimStatus::duplicate:
                if (item.fate == Fate::pending)
                    item.finish_duplicate(Outcome::duplicate_redis, StoredOutcome::applied,
                                          r.stored_result);
                break;
            case ClaimStatus::dead_lettered:
                if (item.fate == Fate::pending)
                    item.finish_duplicate(Outcome::duplicate_redis, StoredOutcome::dead_lettered,
                                          r.stored_result);
                break;
            case ClaimStatus::failed: {
                // This key alone: its record fails, counted and bounded, its
                // partition held; the rest of the batch goes on. Loud, because
                // only an operator can repair the key.
                const auto& record = item.pending.record;
                LogContext log_context(record.topic, record.partition, record.offset, item.key,
                                       &item.pending.trace);
                log_->error(
                    "the Redis claim of key '{}' failed ({}); its record fails this attempt and "
                    "is dead-lettered after max_attempts: delete or repair that Redis key",
                    item.key, r.error);
                if (item.fate == Fate::pending)
                    record_failed(items, idx[n], Failure::retryable, r.error);
                break;
            }
            case ClaimStatus::conflict: {
                item.pending.nacks++;
                ctx_.stats.conflicts++;
                // The holder usually finishes long before its lease runs out:
                // back off exponentially, never past the remaining lease.
                auto delay = std::min(r.retry_after, retry_delay(item.pending.nacks));
                if (item.fate == Fate::pending)
                    item.requeue(delay, "claimed by another worker (CONFLICT)");
                hold_rest_of_partition(items, idx[n]);
                break;
            }
        }
    }
}

void Worker::transaction_step(std::deque<BatchItem>& items) {
    // Records run in partition order: a record that must run alone ends the group
    // before it, runs, and a new group starts after it.
    std::vector<std::size_t> group;
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto& item = items[i];
        if (item.fate != Fate::pending) continue;
        if (item.pending.dead_letter) {
            // Already judged in an earlier try; only its dead-letter step failed.
            item.fate = Fate::dead_letter;
            item.error = item.pending.dead_letter->reason;
            // Nothing behind it runs before it is recorded: a stalled dead letter
            // stops its partition, it does not just hold back the offsets.
            hold_rest_of_partition(items, i);
            continue;
        }
        if (!item.pending.solo) {
            group.push_back(i);
            continue;
        }
        run_group(items, group);
        group.clear();
        run_group(items, {i});
    }
    run_group(items, group);
}

void Worker::run_group(std::deque<BatchItem>& items, const std::vector<std::size_t>& group) {
    if (group.empty()) return;
    for (auto i : group) items[i].in_transaction = true;
    std::string why;
    // Records rarely fail, so a group first runs without savepoints; if one
    // fails, everything it did is rolled back and the group runs again with a
    // savepoint per record, where the failure rolls back alone. (handle() then
    // runs twice for the records before it: HandlerContext::rerun() says so.)
    const bool solo = group.size() == 1 && items[group.front()].pending.solo;
    // The records a failed pass decided about; those decided before it (a
    // record a batch handler named, the records held behind it) keep their fate.
    std::vector<std::size_t> live;
    const auto forget_failed_pass = [&] {
        for (auto i : live) items[i].reset_to_pending();
    };
    if (!solo) {
        // A batch handler that names its bad record (BatchRecordFailed) costs
        // one more optimistic pass without it, not a savepoint per record.
        // Bounded: a handler that keeps naming records goes careful.
        for (int exclusions = 0;; ++exclusions) {
            live.clear();
            for (auto i : group)
                if (items[i].fate == Fate::pending) live.push_back(i);
            if (live.empty()) return;
            std::optional<Blame> blame;
            if (run_transaction(items, group, /*careful=*/false, why, &blame)) return;
            forget_failed_pass();
            if (!blame || exclusions == kMaxExclusions) break;
            ctx_.stats.records_isolated++;
            record_failed(items, blame->index, blame->failure, blame->why);
        }
    } else {
        live = group;
    }
    if (run_transaction(items, group, /*careful=*/true, why)) return;

    // The COMMIT failed (a deferred constraint, or the server rolled back) and
    // says nothing of which record caused it.
    if (group.size() == 1) {
        auto i = group.front();
        items[i].reset_to_pending();
        record_failed(items, i, Failure::retryable, "COMMIT failed: " + why);
        return;
    }
    // Isolate it: each record that had run goes once more in a transaction of its
    // own, so the one that fails COMMIT fails alone and pays alone.
    log_->warn("COMMIT of {} records failed ({}); running each in its own transaction",
               group.size(), printable_text(why));
    for (auto i : group) {
        auto& item = items[i];
        if (item.fate == Fate::finished || item.fate == Fate::park) {
            item.reset_to_pending();
            item.pending.solo = true;
        }
    }
    for (auto i : group)
        if (items[i].fate == Fate::pending) run_group(items, {i});
}

bool Worker::run_transaction(std::deque<BatchItem>& items, const std::vector<std::size_t>& group,
                             bool careful, std::string& why, std::optional<Blame>* blame) {
    BatchTransaction batch(postgres_.connection());
    auto& tx = batch.statements();
    const auto roll_back = [&] {
        batch.rollback();
        ctx_.stats.postgres_round_trips += 2;  // BEGIN and ROLLBACK
        return false;
    };
    // Optimistic: the framework's SQL of every record at once, then the handlers.
    const bool set_based = ctx_.config.pipeline.framework_sql == FrameworkSql::set_based;
    if (!careful && set_based && !start_group_set_based(tx, items, group, why)) return roll_back();
    if (careful) lock_group_entities(tx, items, group);
    std::optional<std::size_t> previous;  // careful: the record whose savepoint is open
    // Optimistic: consecutive records of one batch handler's binding, one
    // handle_batch() call per run. Handlers see records in the group's order,
    // the order their sequences were decided in (docs/design.md section 5.3).
    std::vector<std::size_t> run;
    const auto flush_run = [&] {
        if (run.empty()) return true;
        std::optional<Blame> named;
        const bool ran = run_batch_handler(tx, items, run, why, named);
        run.clear();
        if (!ran && blame) *blame = std::move(named);
        return ran;
    };
    for (auto i : group) {
        auto& item = items[i];
        if (item.fate != Fate::pending) continue;  // decided already, or held behind a record
        if (!careful && item.framework_started && batch_handlers_.count(item.binding->topic)) {
            if (!run.empty() && items[run.front()].binding != item.binding && !flush_run())
                return roll_back();
            run.push_back(i);
            continue;
        }
        if (!flush_run()) return roll_back();
        if (careful) {
            savepoint(tx, previous ? kNextSavepoint : kFirstSavepoint, items, previous);
            previous = i;
            if (item.fate != Fate::pending) continue;  // held behind the record just blamed
        }
        if (!run_one(tx, item, items, i, careful)) {
            why = item.error;
            return roll_back();
        }
    }
    if (!flush_run()) return roll_back();
    // The last record's handler may have left the transaction aborted too.
    if (careful && previous) savepoint(tx, kReleaseSavepoint, items, previous);
    ctx_.stats.postgres_round_trips += 2;  // BEGIN and COMMIT
    try {
        batch.commit();
    } catch (const std::exception& e) {
        if (classify(e) == Failure::postgres_down) throw;  // the dedup rows decide on the retry
        why = e.what();
        return false;
    }
    // Whatever this transaction decided for its records is durable now.
    for (auto i : group) items[i].committed = true;
    return true;
}

void Worker::lock_group_entities(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                                 const std::vector<std::size_t>& group) {
    std::vector<SequenceValue> values;
    std::vector<SequenceStep> steps;
    values.reserve(group.size());  // never reallocates: the steps refer into it
    for (auto i : group) {
        auto& item = items[i];
        if (item.fate != Fate::pending || !item.binding->sequence) continue;
        try {
            values.push_back(extract_sequence(*item.binding->sequence, item.payload));
        } catch (const PermanentError&) {
            continue;  // its own step dead-letters it
        }
        steps.push_back({item.binding->handler, values.back().entity, values.back().sequence,
                         item.binding->sequence->mode});
    }
    // A lock timeout or deadlock here is nobody's record's: it fails the group
    // as contention, uncounted (batch_failed).
    ctx_.stats.postgres_round_trips += static_cast<std::uint64_t>(lock_entities(tx, steps));
}

void Worker::savepoint(pqxx::transaction_base& tx, const char* statement,
                       std::deque<BatchItem>& items, std::optional<std::size_t> previous) {
    ctx_.stats.postgres_round_trips++;
    try {
        tx.exec(statement);
        return;
    } catch (const std::exception& e) {
        // 25P02: the transaction was already aborted when this statement came.
        // Every statement of the previous record succeeded, as far as exo saw,
        // so its handler ran one that failed and swallowed the error.
        if (!previous || !items[*previous].handler_ran || !is_aborted_transaction(e)) throw;
    }
    tx.exec(kRollbackRecord);  // to the previous record's savepoint: it is still open
    ctx_.stats.postgres_round_trips++;
    auto& blamed = items[*previous];
    blamed.reset_to_pending();
    record_failed(items, *previous, Failure::aborted_transaction,
                  swallowed_error_reason(blamed.binding->handler));
    if (statement != kReleaseSavepoint) tx.exec(statement);
}

bool Worker::start_group_set_based(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                                   const std::vector<std::size_t>& group, std::string& why) {
    std::vector<std::size_t> started;  // records[n] is items[started[n]]
    std::vector<GroupRecord> records;
    std::vector<SequenceValue> values;  // the entities records[n].sequence refers to
    values.reserve(group.size());       // never reallocates: the references stay valid
    for (auto i : group) {
        auto& item = items[i];
        if (item.fate != Fate::pending) continue;
        const auto& binding = *item.binding;
        std::optional<SequenceStep> step;
        if (binding.sequence) {
            // Read before anything is written, as on the per-record path.
            try {
                values.push_back(extract_sequence(*binding.sequence, item.payload));
            } catch (const PermanentError& e) {
                item.dead_letter(e.what());
                continue;
            }
            step.emplace(SequenceStep{binding.handler, values.back().entity, values.back().sequence,
                                      binding.sequence->mode});
        }
        started.push_back(i);
        records.push_back({item.key, item.token.value_or(FencingToken{0}), item.partition(),
                           item.pending.record.offset, step});
    }
    // One record: start_record in run_one is one round trip, the set-based start two.
    if (records.size() < 2) return true;
    GroupStart start;
    try {
        start = start_group(tx, ctx_.config.kafka.group_id, records);
    } catch (const std::exception& e) {
        if (pauses_the_worker(classify(e))) throw;  // the whole batch waits for the dependency
        why = printable_text(e.what());
        return false;  // the careful pass meets it record by record
    }
    ctx_.stats.postgres_round_trips += static_cast<std::uint64_t>(start.round_trips);
    ctx_.stats.groups_set_based++;
    if (start.contended) {
        // The per-record path's ContentionError: the careful pass NACKs whoever meets it.
        why = "sequence of " + *start.contended + " moved concurrently";
        return false;
    }
    for (std::size_t n = 0; n < records.size(); ++n) {
        auto& item = items[started[n]];
        auto& decided = start.records[n];
        if (decided.duplicate) {
            item.finish_duplicate(Outcome::duplicate_postgres, decided.duplicate->outcome,
                                  std::move(decided.duplicate->result));
            continue;
        }
        switch (*decided.verdict) {
            case SequenceVerdict::apply:
                item.framework_started = true;  // run_one runs only its handler
                break;
            case SequenceVerdict::stale:
                item.result.clear();
                item.finish(Outcome::stale);
                break;
            case SequenceVerdict::gap: {
                const auto& seq = *records[n].sequence;
                auto expired =
                    gap_expiry(*item.binding, seq.entity, seq.sequence, decided.gap_waited);
                if (!expired.empty())
                    item.dead_letter(std::move(expired), /*record_key=*/false,
                                     /*clears_gap=*/true);
                else
                    park_for_gap(item, seq.entity);
                break;
            }
        }
    }
    return true;
}

bool Worker::run_batch_handler(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                               const std::vector<std::size_t>& batch, std::string& why,
                               std::optional<Blame>& blame) {
    const auto& binding = *items[batch.front()].binding;
    std::vector<BatchContext::Entry> entries(batch.size());
    for (std::size_t n = 0; n < batch.size(); ++n) {
        auto& item = items[batch[n]];
        entries[n] = {&item.pending.record,
                      &item.key,
                      &item.payload,
                      item.pending.attempts + 1,
                      item.handler_ran,
                      {},
                      {},
                      &item.pending.trace};
        item.handler_ran = true;  // a later run of it in this batch is a rerun
    }
    BatchContext context(tx, entries, *log_, ctx_.config.outbox.max_message_bytes);
    ctx_.stats.postgres_round_trips++;  // a handler's statements, at least one
    const auto started = Clock::now();
    std::chrono::microseconds took{0};  // handle_batch() alone, as handle() on the per-record path
    try {
        batch_handlers_.at(binding.topic)->handle_batch(context);
        took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
        // Its emits, every record's in batch order, in one statement of its
        // transaction: failing like one of its statements (a handler that
        // swallowed a database error left the transaction aborted) sends the
        // batch to the careful pass, which finds the record alone.
        std::vector<OutboxMessage> emitted;
        for (auto& entry : entries)
            for (auto& message : entry.emitted) emitted.push_back(std::move(message));
        if (!emitted.empty()) {
            write_outbox(tx, ctx_.config.kafka.group_id, emitted);
            ctx_.stats.postgres_round_trips++;
        }
    } catch (const BatchRecordFailed& e) {
        Failure failure = Failure::retryable;
        why = printable_text(e.what());
        if (e.cause()) {
            try {
                std::rethrow_exception(e.cause());
            } catch (const std::exception& cause) {
                failure = classify(cause);
                if (pauses_the_worker(failure)) throw;  // the whole batch waits
                why = failure == Failure::aborted_transaction
                          ? swallowed_error_reason(binding.handler)
                          : printable_text(cause.what());
            } catch (...) {
                why = "handler '" + binding.handler +
                      "' failed a record with an exception that is not a std::exception";
            }
        }
        if (e.index() < batch.size()) {
            blame = Blame{batch[e.index()], failure, why};
        } else {
            log_->warn(
                "handler '{}' named record {} of a batch of {} as failed; running each "
                "record alone to find it",
                binding.handler, e.index(), batch.size());
        }
        return false;
    } catch (const std::exception& e) {
        if (pauses_the_worker(classify(e))) throw;  // the whole batch waits for the dependency
        why = printable_text(e.what());
        return false;  // which record failed is unknown: the careful pass runs each alone
    } catch (...) {
        why = "handler '" + binding.handler + "' threw an exception that is not a std::exception";
        return false;
    }
    ctx_.stats.handler_ran(binding.topic, took, batch.size());
    std::vector<std::string> keys;
    std::vector<std::string> results;
    for (std::size_t n = 0; n < batch.size(); ++n) {
        if (entries[n].result.empty()) continue;
        if (!is_postgres_text(entries[n].result)) {
            why = "handler '" + binding.handler +
                  "' set a result PostgreSQL cannot store (invalid UTF-8 or a NUL byte): "
                  "encode binary results, e.g. as hex or base64";
            blame = Blame{batch[n], Failure::permanent, why};
            return false;
        }
        keys.push_back(items[batch[n]].key);
        results.push_back(entries[n].result);
    }
    if (!keys.empty()) {
        store_results(tx, ctx_.config.kafka.group_id, keys, results);
        ctx_.stats.postgres_round_trips++;
    }
    for (std::size_t n = 0; n < batch.size(); ++n) {
        auto& item = items[batch[n]];
        item.result = std::move(entries[n].result);
        item.finish(Outcome::applied);
    }
    return true;
}

void Worker::park_for_gap(BatchItem& item, const std::string& entity) {
    // Parked, not held: the predecessor may be right behind it.
    // Capped at 1 s so a filled gap is noticed soon.
    auto delay = std::min(retry_delay(++item.pending.gap_waits), milliseconds(1000));
    item.park(delay, "waiting for an earlier sequence of " + entity);
}

bool Worker::run_one(pqxx::transaction_base& tx, BatchItem& item, std::deque<BatchItem>& items,
                     std::size_t index, bool careful) {
    const auto& binding = *item.binding;
    const auto& topic = binding.topic;
    const auto& r = item.pending.record;
    // The handler's log lines and exo's about this record carry its coordinates.
    LogContext log_context(r.topic, r.partition, r.offset, item.key, &item.pending.trace);
    // Read before anything is written: a bad sequence field is the record's
    // fault alone and needs no rollback.
    std::optional<SequenceValue> seq;
    if (binding.sequence && !item.framework_started) {
        try {
            seq = extract_sequence(*binding.sequence, item.payload);
        } catch (const PermanentError& e) {
            item.dead_letter(e.what());
            return true;
        }
    }
    auto& handler = *handlers_.at(topic);
    std::chrono::microseconds handler_took{0};
    try {
        const RecordStepInput input{binding,
                                    ctx_.config.kafka.group_id,
                                    item.pending.record,
                                    item.key,
                                    item.payload,
                                    seq,
                                    item.token.value_or(FencingToken{0}),
                                    handler,
                                    *log_,
                                    item.pending.attempts + 1,
                                    item.handler_ran,
                                    &handler_took,
                                    ctx_.config.outbox.max_message_bytes,
                                    &item.pending.trace};
        auto step =
            item.framework_started
                ? run_handler_step(tx, input)
                : run_record_step(tx, input,
                                  careful ? GapUndo::rollback_to_savepoint : GapUndo::delete_row);
        ctx_.stats.postgres_round_trips += static_cast<std::uint64_t>(step.round_trips);
        if (step.outcome == Outcome::applied) ctx_.stats.handler_ran(topic, handler_took);
        if (step.outcome == Outcome::duplicate_postgres) {
            item.finish_duplicate(Outcome::duplicate_postgres, step.stored, std::move(step.result));
        } else if (step.outcome) {
            item.result = std::move(step.result);
            item.finish(*step.outcome);
        } else if (!step.gap_expired.empty()) {
            item.dead_letter(std::move(step.gap_expired), /*record_key=*/false,
                             /*clears_gap=*/true);
        } else {
            park_for_gap(item, seq->entity);
        }
        return true;
    } catch (const std::exception& e) {
        const Failure failure = classify(e);
        if (pauses_the_worker(failure)) throw;  // the whole batch waits for the dependency
        const std::string why = failure == Failure::aborted_transaction
                                    ? swallowed_error_reason(binding.handler)
                                    : printable_text(e.what());
        return record_step_failed(tx, items, index, careful, failure, why);
    } catch (...) {
        // Not a std::exception: nothing says what it means, so it is retried.
        return record_step_failed(
            tx, items, index, careful, Failure::retryable,
            "handler '" + binding.handler + "' threw an exception that is not a std::exception");
    }
}

bool Worker::record_step_failed(pqxx::transaction_base& tx, std::deque<BatchItem>& items,
                                std::size_t index, bool careful, Failure failure,
                                const std::string& why) {
    if (!careful) {
        items[index].error = why;
        return false;  // the optimistic pass rolls everything back and goes careful
    }
    tx.exec(kRollbackRecord);
    ctx_.stats.postgres_round_trips++;
    record_failed(items, index, failure, why);
    return true;
}

void Worker::record_failed(std::deque<BatchItem>& items, std::size_t index, Failure failure,
                           const std::string& why) {
    auto& item = items[index];
    const auto& r = item.pending.record;
    LogContext log_context(r.topic, r.partition, r.offset, item.key, &item.pending.trace);
    const int attempts = item.pending.attempts + (counts_as_attempt(failure) ? 1 : 0);
    item.pending.attempts = attempts;
    switch (decide_record_failure(failure, attempts, item.binding->max_attempts)) {
        case Action::dead_letter:
            item.dead_letter(failure == Failure::permanent
                                 ? why
                                 : "gave up after " + std::to_string(attempts) +
                                       " attempts: " + why);
            return;
        case Action::nack:
            record_contended(items, index, why);
            return;
        case Action::retry:
        case Action::pause:  // not reached: a paused worker's failure never gets here
        case Action::stall:
            break;
    }
    ctx_.stats.retries++;
    auto delay = retry_delay(attempts);
    log_->info("{} attempt {} failed, retrying in {} ms: {}", item.key, attempts, delay.count(),
               why);
    item.requeue(delay, why);
    hold_rest_of_partition(items, index);
}

void Worker::record_contended(std::deque<BatchItem>& items, std::size_t index,
                              const std::string& why) {
    // Like a Redis CONFLICT: another transaction (live, or frozen until the
    // server ends it) holds a row this record needs. Not the record's fault.
    auto& item = items[index];
    item.pending.nacks++;
    ctx_.stats.conflicts++;
    item.requeue(retry_delay(item.pending.nacks), "a row lock is held elsewhere: " + why);
    hold_rest_of_partition(items, index);
}

void Worker::complete_step(std::deque<BatchItem>& items) {
    std::vector<CompleteRequest> requests;
    for (auto& item : items) {
        if (item.fate != Fate::finished || !item.token) continue;
        if (item.outcome == Outcome::duplicate_redis) continue;  // Redis said so itself
        requests.push_back({item.key, *item.token, item.result, item.stored});
        item.token.reset();  // the claim is settled one way or the other
    }
    ClaimStore* claims = redis_.connected();
    if (requests.empty() || claims == nullptr) return;
    try {
        auto before = redis_.round_trips();
        auto statuses = claims->complete(requests, ctx_.config.claim.completed_ttl);
        ctx_.stats.redis_round_trips += redis_.round_trips() - before;
        for (auto s : statuses)
            if (s == FinishStatus::lost) ctx_.stats.lost_completions++;
    } catch (const RedisError& e) {
        // The effects are committed and the dedup rows say so: a claim left
        // PROCESSING expires after its lease and the next owner finds the row.
        log_->warn("could not mark {} claims completed (harmless, PostgreSQL holds the truth): {}",
                   requests.size(), e.what());
        redis_.failed();
    }
}

void Worker::release_step(std::deque<BatchItem>& items) {
    std::vector<TokenRequest> requests;
    for (auto& item : items)
        if (item.token) {  // not settled by complete(): give it back
            requests.push_back({item.key, *item.token});
            item.token.reset();
        }
    ClaimStore* claims = redis_.connected();
    if (requests.empty() || claims == nullptr) return;
    try {
        claims->release(requests);
    } catch (const RedisError& e) {
        // The claims expire after their lease; only latency is lost.
        log_->warn("could not release {} claims: {}", requests.size(), e.what());
        redis_.failed();
    }
}

void Worker::hand_back(std::deque<BatchItem>& items) {
    std::vector<FinishedOffset> finished;
    std::vector<PendingRecord> requeue;
    std::vector<WorkerInbox::Parked> parked;
    std::map<TopicPartition, Clock::time_point> hold;
    const auto now = Clock::now();
    const auto wall_now = std::chrono::system_clock::now();
    for (auto& item : items) {
        switch (item.fate) {
            case Fate::finished:
                if (item.pending.stalled) inbox_.clear_stalled(item.partition());
                finished.push_back({item.partition(), item.pending.record.offset});
                ctx_.stats.record_finished(item.pending.record.topic.value, *item.outcome,
                                           std::chrono::duration_cast<std::chrono::microseconds>(
                                               now - item.pending.polled_at),
                                           since_produced(item.pending.record, wall_now));
                break;
            case Fate::park:
                ctx_.stats.parked_record(item.pending.record.topic.value);
                parked.push_back({std::move(item.pending), now + item.delay});
                break;
            case Fate::pending:  // not reached: every step leaves a fate
            case Fate::dead_letter:
            case Fate::requeue: {
                auto until = now + item.delay;
                auto& h = hold[item.partition()];
                if (until > h) h = until;
                requeue.push_back(std::move(item.pending));
                break;
            }
        }
    }
    if (!finished.empty()) ctx_.on_finished(finished);
    inbox_.finish_batch(std::move(requeue), hold, std::move(parked));
}

std::vector<TokenRequest> Worker::open_claims(const std::deque<BatchItem>& items) {
    std::vector<TokenRequest> held;
    for (const auto& item : items)
        if (item.token) held.push_back({item.key, *item.token});
    return held;
}

void Worker::hold_rest_of_partition(std::deque<BatchItem>& items, std::size_t index) {
    auto tp = items[index].partition();
    for (std::size_t j = index + 1; j < items.size(); ++j)
        if (items[j].fate == Fate::pending && items[j].partition() == tp)
            items[j].requeue(milliseconds(0), "behind a held record of its partition");
}

void Worker::prepare_handlers(pqxx::connection& connection) {
    for (const auto& b : ctx_.config.bindings) {
        try {
            handlers_.at(b.topic)->prepare(connection);
        } catch (const std::exception& e) {
            if (classify(e) == Failure::postgres_down) throw;
            throw HandlerPrepareError("handler '" + b.handler + "' (topic " + b.topic +
                                      ") failed in prepare(): " + e.what() +
                                      "; fix the handler's statements or apply its migration");
        } catch (...) {
            throw HandlerPrepareError("handler '" + b.handler + "' (topic " + b.topic +
                                      ") threw a non-std::exception in prepare(); fix the handler");
        }
    }
}

}  // namespace exo
