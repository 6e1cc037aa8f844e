#include "pipeline/worker.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <pqxx/pqxx>
#include <unordered_set>

#include "core/errors.hpp"
#include "core/key_derivation.hpp"
#include "pg/batch_transaction.hpp"
#include "pg/framework_statements.hpp"
#include "pg/pg_errors.hpp"
#include "pipeline/dead_letter.hpp"
#include "redis/redis_error.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Issued before each record; the release of the previous record's savepoint
// rides in the same round trip. COMMIT commits an open savepoint, so the last
// one is never released explicitly.
constexpr const char* kFirstSavepoint = "SAVEPOINT exo_record";
constexpr const char* kNextSavepoint = "RELEASE SAVEPOINT exo_record; SAVEPOINT exo_record";
constexpr const char* kRollbackRecord = "ROLLBACK TO SAVEPOINT exo_record";

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
      dead_letters_(ctx_.dead_letter_producer),
      lease_keeper_(ctx_.config, owner_, ctx_.stats, log_) {
    for (const auto& b : ctx_.config.bindings)
        if (!handlers_.count(b.handler))
            handlers_.emplace(b.handler, ctx_.handlers.create(b.handler));
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
        if (index_ == 0) prune_if_due();
        auto batch = inbox_.take_batch(static_cast<std::size_t>(p.batch_size), p.linger, stop);
        if (batch.empty()) continue;
        run_batch(std::move(batch));
    }
}

void Worker::run_batch(std::vector<PendingRecord> batch) {
    std::deque<BatchItem> items;  // a deque never moves its elements: they point into themselves
    for (auto& r : batch) items.emplace_back(std::move(r));
    ctx_.stats.batches++;

    try {
        prepare_items(items);
        claim_step(items);
        ctx_.failpoints.hit("after_claim");
        lease_keeper_.hold(open_claims(items));
        transaction_step(items);
        ctx_.failpoints.hit("after_pg_commit");
        complete_step(items);
        lease_keeper_.hold(open_claims(items));  // completed claims need no renewal
        dead_letter_step(items);
        healthy_ = true;
        other_failures_ = 0;
        if (pg_down_logged_) log_->info("PostgreSQL is reachable again");
        pg_down_logged_ = false;
    } catch (const std::exception& e) {
        // A dependency failed for the whole batch: nothing in it is known to be
        // durable except what a committed transaction wrote, and the dedup rows
        // make running those again harmless. Put everything back and wait.
        ctx_.stats.batch_failures++;
        healthy_ = false;
        bool pg_gone = dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
                       (dynamic_cast<const pqxx::failure*>(&e) != nullptr &&
                        classify_pg_error(e) != PgFailure::retryable &&
                        classify_pg_error(e) != PgFailure::permanent);
        if (pg_gone) drop_postgres();
        bool redis_gone = dynamic_cast<const RedisError*>(&e) != nullptr;
        int failures = pg_gone      ? ++pg_failures_
                       : redis_gone ? ++redis_failures_
                                    : ++other_failures_;
        auto delay = retry_delay(failures);
        // Once per outage, not once per retry: an operator needs the state change.
        if (!pg_gone || !pg_down_logged_)
            log_->warn("batch of {} put back, retrying in {} ms: {}", items.size(), delay.count(),
                       e.what());
        if (pg_gone) pg_down_logged_ = true;
        for (auto& item : items) item.requeue(delay, e.what());
    }
    lease_keeper_.clear();
    // A batch in hand is always finished, even when stopping: its claims and offsets settle.
    release_step(items);
    hand_back(items);
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
            item.dead_letter(e.what());
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
    if (!claims_available()) {
        if (ctx_.config.pipeline.on_redis_down == RedisDownPolicy::postgres_only) return;
        throw RedisIoError("Redis is unreachable (on_redis_down: pause)");
    }
    std::vector<ClaimResult> results;
    try {
        auto before = redis_->round_trips();
        results = claims_->claim(keys, ctx_.config.claim.lease);
        ctx_.stats.redis_round_trips += redis_->round_trips() - before;
    } catch (const RedisError& e) {
        claims_.reset();
        redis_.reset();
        redis_retry_at_ = Clock::now() + retry_delay(++redis_failures_);
        if (ctx_.config.pipeline.on_redis_down == RedisDownPolicy::postgres_only) {
            log_->warn("Redis failed ({}); continuing on the PostgreSQL dedup row alone", e.what());
            return;
        }
        throw;
    }
    redis_failures_ = 0;
    for (std::size_t n = 0; n < idx.size(); ++n) {
        auto& item = items[idx[n]];
        const auto& r = results[n];
        switch (r.status) {
            case ClaimStatus::acquired:
            case ClaimStatus::taken_over:
                item.token = r.token;
                break;
            case ClaimStatus::duplicate:
                item.result = r.stored_result;
                if (item.fate == Fate::pending) item.finish(Outcome::duplicate_redis);
                break;
            case ClaimStatus::dead_lettered:
                item.result = r.stored_result;
                if (item.fate == Fate::pending) item.finish(Outcome::dead_lettered);
                break;
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
    std::vector<std::size_t> pending;
    for (std::size_t i = 0; i < items.size(); ++i)
        if (items[i].fate == Fate::pending) pending.push_back(i);
    if (pending.empty()) return;
    // Records rarely fail, so the batch first runs without savepoints; if one
    // fails, everything it did is rolled back and the batch runs again with a
    // savepoint per record, where the failure rolls back alone.
    if (run_transaction(items, pending, /*careful=*/false)) return;
    for (auto i : pending) items[i].reset_to_pending();
    run_transaction(items, pending, /*careful=*/true);
}

bool Worker::run_transaction(std::deque<BatchItem>& items, const std::vector<std::size_t>& pending,
                             bool careful) {
    BatchTransaction batch(postgres());
    auto& tx = batch.statements();
    bool first = true;
    for (auto i : pending) {
        auto& item = items[i];
        if (item.fate != Fate::pending) continue;  // held behind an earlier record
        if (careful) {
            tx.exec(first ? kFirstSavepoint : kNextSavepoint);
            ctx_.stats.postgres_round_trips++;
            first = false;
        }
        if (!run_one(tx, item, items, i, careful)) {
            batch.rollback();
            ctx_.stats.postgres_round_trips += 2;  // BEGIN and ROLLBACK
            return false;
        }
    }
    batch.commit();
    ctx_.stats.postgres_round_trips += 2;  // BEGIN and COMMIT
    pg_failures_ = 0;
    return true;
}

bool Worker::run_one(pqxx::transaction_base& tx, BatchItem& item, std::deque<BatchItem>& items,
                     std::size_t index, bool careful) {
    const auto& binding = *item.binding;
    const auto& record = item.pending.record;
    // Read before anything is written: a bad sequence field is the record's
    // fault alone and needs no rollback.
    SequenceValue seq;
    if (binding.sequence) {
        try {
            seq = extract_sequence(*binding.sequence, item.payload);
        } catch (const PermanentError& e) {
            item.dead_letter(e.what());
            return true;
        }
    }
    try {
        ProcessedRow row{ctx_.config.kafka.group_id,
                         item.key,
                         item.token.value_or(FencingToken{0}),
                         record.topic_partition(),
                         record.offset,
                         ProcessedOutcome::applied,
                         {}};
        std::optional<SequenceStep> step;
        if (binding.sequence)
            step.emplace(
                SequenceStep{binding.handler, seq.entity, seq.sequence, binding.sequence->mode});
        ctx_.stats.postgres_round_trips++;
        auto start = start_record(tx, row, step);
        if (start.duplicate) {
            ctx_.stats.postgres_round_trips++;
            item.result = start.duplicate->result;
            item.previously_dead_lettered = start.duplicate->outcome == "DEAD_LETTERED";
            item.finish(Outcome::duplicate_postgres);
            return true;
        }
        if (!start.verdict)
            throw RetryableError("sequence of " + seq.entity + " moved concurrently");
        if (*start.verdict == SequenceVerdict::stale) {
            update_processed(tx, row.consumer_group, item.key, ProcessedOutcome::stale, "");
            ctx_.stats.postgres_round_trips++;
            item.finish(Outcome::stale);
            return true;
        }
        if (*start.verdict == SequenceVerdict::gap) {
            // Not applied, so its dedup row must not stay.
            if (careful)
                tx.exec(kRollbackRecord);
            else
                delete_processed(tx, row.consumer_group, item.key);
            ctx_.stats.postgres_round_trips++;
            auto now = Clock::now();
            if (item.pending.gap_since == Clock::time_point{}) item.pending.gap_since = now;
            if (now - item.pending.gap_since >= binding.sequence->gap_timeout) {
                item.record_dead_letter_key = false;
                item.dead_letter("sequence gap for " + seq.entity + ": " +
                                 std::to_string(seq.sequence) +
                                 " never became next within gap_timeout");
            } else {
                // Parked, not held: the predecessor may be right behind it.
                // Capped at 1 s so a filled gap is noticed soon.
                auto delay = std::min(retry_delay(++item.pending.gap_waits), milliseconds(1000));
                item.park(delay, "waiting for an earlier sequence of " + seq.entity);
            }
            return true;
        }
        HandlerContext hctx(tx, record, item.key, item.payload, *log_, item.pending.attempts + 1);
        ctx_.stats.postgres_round_trips++;  // a handler's statements, at least one
        handlers_.at(binding.handler)->handle(hctx);
        if (!hctx.result().empty()) {
            update_processed(tx, row.consumer_group, item.key, ProcessedOutcome::applied,
                             hctx.result());
            ctx_.stats.postgres_round_trips++;
        }
        item.result = hctx.result();
        item.finish(Outcome::applied);
        return true;
    } catch (const std::exception& e) {
        PgFailure kind = dynamic_cast<const PermanentError*>(&e)   ? PgFailure::permanent
                         : dynamic_cast<const RetryableError*>(&e) ? PgFailure::retryable
                                                                   : classify_pg_error(e);
        if (kind == PgFailure::connection_lost || kind == PgFailure::outcome_unknown) throw;
        if (!careful) return false;
        tx.exec(kRollbackRecord);
        ctx_.stats.postgres_round_trips++;
        item.pending.attempts++;
        if (kind == PgFailure::permanent) {
            item.dead_letter(e.what());
            return true;
        }
        if (item.pending.attempts >= binding.max_attempts) {
            item.dead_letter("gave up after " + std::to_string(item.pending.attempts) +
                             " attempts: " + e.what());
            return true;
        }
        ctx_.stats.retries++;
        auto delay = retry_delay(item.pending.attempts);
        log_->info("{} attempt {} failed, retrying in {} ms: {}", item.key, item.pending.attempts,
                   delay.count(), e.what());
        item.requeue(delay, e.what());
        hold_rest_of_partition(items, index);
        return true;
    }
}

void Worker::complete_step(std::deque<BatchItem>& items) {
    std::vector<CompleteRequest> requests;
    for (auto& item : items) {
        if (item.fate != Fate::finished || !item.token) continue;
        if (item.outcome == Outcome::duplicate_redis || item.outcome == Outcome::dead_lettered)
            continue;
        requests.push_back(
            {item.key, *item.token, item.result,
             item.previously_dead_lettered ? FinalState::dead_lettered : FinalState::completed});
        item.token.reset();  // the claim is settled one way or the other
    }
    if (requests.empty() || !redis_) return;
    try {
        auto before = redis_->round_trips();
        auto statuses = claims_->complete(requests, ctx_.config.claim.completed_ttl);
        ctx_.stats.redis_round_trips += redis_->round_trips() - before;
        for (auto s : statuses)
            if (s == FinishStatus::lost) ctx_.stats.lost_completions++;
    } catch (const RedisError& e) {
        // The effects are committed and the dedup rows say so: a claim left
        // PROCESSING expires after its lease and the next owner finds the row.
        log_->warn("could not mark {} claims completed (harmless, PostgreSQL holds the truth): {}",
                   requests.size(), e.what());
        claims_.reset();
        redis_.reset();
    }
}

void Worker::dead_letter_step(std::deque<BatchItem>& items) {
    std::vector<BatchItem*> dead;
    for (auto& item : items)
        if (item.fate == Fate::dead_letter) dead.push_back(&item);
    if (dead.empty()) return;
    try {
        for (auto* item : dead) {
            std::string topic = item->binding ? item->binding->dead_letter_topic
                                              : item->pending.record.topic.value + ".dlq";
            dead_letters_.produce(make_dead_letter(item->pending, topic, item->error, item->key));
        }
        dead_letters_.flush(milliseconds(30000));
    } catch (const std::exception& e) {
        // Not acknowledged by Kafka: the record must not be skipped. Try again later.
        ctx_.stats.dead_letter_failures++;
        auto delay = retry_delay(++other_failures_);
        log_->error("dead-letter produce failed, {} records kept and retried in {} ms: {}",
                    dead.size(), delay.count(), e.what());
        for (auto* item : dead) item->requeue(delay, e.what());
        return;
    }
    // Durable record of the dead letter, so a redelivery after Redis loss does not
    // produce it again (records without a key have no row: they are at-least-once).
    {
        BatchTransaction batch(postgres());
        for (auto* item : dead) {
            if (item->key.empty() || !item->record_dead_letter_key) continue;
            const auto& r = item->pending.record;
            insert_processed(
                batch.statements(),
                {ctx_.config.kafka.group_id, item->key, item->token.value_or(FencingToken{0}),
                 r.topic_partition(), r.offset, ProcessedOutcome::dead_lettered, item->error});
        }
        batch.commit();
    }
    std::vector<CompleteRequest> requests;
    for (auto* item : dead) {
        const auto& r = item->pending.record;
        log_->error("dead-lettered {}[{}]@{} (key '{}'): {}", r.topic.value, r.partition.value,
                    r.offset.value, item->key, item->error);
        ctx_.stats.dead_lettered++;
        item->finish(Outcome::dead_lettered);
        if (item->token && item->record_dead_letter_key) {
            requests.push_back({item->key, *item->token, item->error, FinalState::dead_lettered});
            item->token.reset();
        }
    }
    if (requests.empty() || !redis_) return;
    try {
        claims_->complete(requests, ctx_.config.claim.completed_ttl);
    } catch (const RedisError& e) {
        log_->warn("could not mark {} claims dead-lettered: {}", requests.size(), e.what());
    }
}

void Worker::release_step(std::deque<BatchItem>& items) {
    std::vector<TokenRequest> requests;
    for (auto& item : items)
        if (item.token) {  // not settled by complete(): give it back
            requests.push_back({item.key, *item.token});
            item.token.reset();
        }
    if (requests.empty() || !redis_) return;
    try {
        claims_->release(requests);
    } catch (const RedisError& e) {
        // The claims expire after their lease; only latency is lost.
        log_->warn("could not release {} claims: {}", requests.size(), e.what());
        claims_.reset();
        redis_.reset();
    }
}

void Worker::hand_back(std::deque<BatchItem>& items) {
    std::vector<FinishedOffset> finished;
    std::vector<PendingRecord> requeue;
    std::vector<WorkerInbox::Parked> parked;
    std::map<TopicPartition, Clock::time_point> hold;
    auto now = Clock::now();
    for (auto& item : items) {
        switch (item.fate) {
            case Fate::finished:
                finished.push_back({item.partition(), item.pending.record.offset});
                ctx_.stats.latency.record(std::chrono::duration_cast<std::chrono::microseconds>(
                    now - item.pending.polled_at));
                switch (item.outcome) {
                    case Outcome::applied:
                        ctx_.stats.applied++;
                        break;
                    case Outcome::duplicate_redis:
                        ctx_.stats.duplicates_redis++;
                        break;
                    case Outcome::duplicate_postgres:
                        ctx_.stats.duplicates_postgres++;
                        break;
                    case Outcome::stale:
                        ctx_.stats.stale++;
                        break;
                    default:
                        break;
                }
                break;
            case Fate::park:
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

void Worker::prune_if_due() {
    auto now = Clock::now();
    if (now < next_prune_) return;
    next_prune_ = now + std::chrono::minutes(10);
    try {
        std::size_t total = 0;
        // Small chunks, each its own transaction: never one long lock-holding delete.
        for (int chunk = 0; chunk < 100; ++chunk) {
            BatchTransaction batch(postgres());
            auto deleted =
                prune_processed(batch.statements(), ctx_.config.postgres.dedup_retention, 1000);
            batch.commit();
            total += deleted;
            if (deleted < 1000) break;
        }
        if (total > 0) log_->info("pruned {} dedup rows older than the retention", total);
    } catch (const std::exception& e) {
        next_prune_ = now + std::chrono::minutes(1);
        log_->warn("pruning dedup rows failed, will retry: {}", e.what());
    }
}

bool Worker::claims_available() {
    if (claims_) return true;
    if (Clock::now() < redis_retry_at_) return false;
    try {
        const auto& rc = ctx_.config.redis;
        redis_.emplace(RedisOptions{rc.host, rc.port, rc.password, rc.db, rc.connect_timeout,
                                    rc.command_timeout});
        claims_.emplace(*redis_, rc.key_prefix, ctx_.config.kafka.group_id, owner_);
        if (redis_down_logged_) log_->info("Redis is reachable again");
        redis_down_logged_ = false;
        return true;
    } catch (const RedisError& e) {
        redis_.reset();
        redis_retry_at_ = Clock::now() + retry_delay(++redis_failures_);
        if (!redis_down_logged_) log_->warn("Redis unreachable: {}", e.what());
        redis_down_logged_ = true;
        return false;
    }
}

pqxx::connection& Worker::postgres() {
    if (pg_ && pg_->is_open()) return *pg_;
    pg_.reset();
    auto conn = std::make_unique<pqxx::connection>(ctx_.config.postgres.uri);
    prepare_framework_statements(*conn);
    for (auto& [_, handler] : handlers_) handler->prepare(*conn);
    pg_ = std::move(conn);
    return *pg_;
}

void Worker::drop_postgres() {
    pg_.reset();
}

}  // namespace exo
