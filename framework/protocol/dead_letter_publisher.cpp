#include "protocol/dead_letter_publisher.hpp"
#include "core/log_context.hpp"

#include <pqxx/pqxx>
#include <utility>

#include "core/log_context.hpp"
#include "core/text.hpp"
#include "kafka/kafka_error.hpp"
#include "kafka/kafka_names.hpp"
#include "pg/dead_letter_record.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/framework_statements.hpp"
#include "protocol/dead_letter.hpp"
#include "redis/redis_error.hpp"

namespace exo {

ProducerOptions dead_letter_producer(const std::string& bootstrap, const KafkaConfig& kafka) {
    ProducerOptions options{bootstrap, {}};
    for (const auto& [name, value] : kafka.properties)
        if (!is_consumer_only_property(name)) options.properties.emplace(name, value);
    options.properties.try_emplace("message.timeout.ms", "8000");
    return options;
}
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long one dead letter may wait for Kafka's acknowledgement (the producer's
// message.timeout.ms is below it, see daemon.cpp), and how long one dead-letter
// step may keep its transaction open (config requires the idle-in-transaction
// timeout to exceed it).
constexpr milliseconds kDeadLetterFlushTimeout{10000};
constexpr milliseconds kDeadLetterStepBudget{30000};

}  // namespace

DeadLetterPublisher::DeadLetterPublisher(DeadLetterSettings settings,
                                         const ProducerOptions& producer, PipelineStats& stats,
                                         spdlog::logger& log, PostgresAccess& postgres,
                                         ClaimAccess& redis,
                                         std::function<milliseconds(int)> backoff)
    : settings_(std::move(settings)),
      stats_(stats),
      log_(log),
      postgres_(postgres),
      redis_(redis),
      backoff_(std::move(backoff)),
      producer_options_(producer) {}

KafkaProducer& DeadLetterPublisher::producer() {
    if (!producer_) producer_.emplace(producer_options_);
    return *producer_;
}

void DeadLetterPublisher::publish(Batch& batch, ClaimLeases& leases) {
    std::vector<BatchRecord*> dead;
    for (auto& item : batch)
        if (item.is_dead_letter()) dead.push_back(&item);
    if (dead.empty()) return;

    // The DEAD_LETTERED row is written first and committed only after Kafka
    // acknowledged the dead letter: a row PostgreSQL refuses is found before
    // anything is produced, and a produce that fails leaves no row behind.
    std::vector<BatchRecord*> produced;
    // The dedup row already existed: nothing to produce, it finishes as that row says.
    std::vector<std::pair<BatchRecord*, ExistingRow>> known;
    try {
        ExplicitTransaction transaction(postgres_.connection());
        auto& tx = transaction.statements();
        const auto& group = settings_.group;
        const auto started = Clock::now();
        for (auto* item : dead) {
            // The transaction stays open while Kafka answers: past the budget the
            // rest waits for the next batch, uncounted, rather than keep it open
            // (and its session idle) for as many timeouts as there are letters.
            if (Clock::now() - started > kDeadLetterStepBudget) {
                item->requeue(backoff_(1), "the dead-letter step ran out of time");
                continue;
            }
            const auto& verdict = *item->verdict();
            tx.exec("SAVEPOINT exo_dead_letter");
            try {
                if (!item->key.empty() && verdict.record_key) {
                    const auto& r = item->pending.record;
                    auto existing = insert_processed(
                        tx, {group, item->key, item->token.value_or(FencingToken{0}),
                             r.topic_partition(), r.offset, StoredOutcome::dead_lettered,
                             printable_text(verdict.reason), item->fingerprint});
                    if (existing) {
                        // Applied by another copy meanwhile, or dead-lettered by an
                        // earlier try whose acknowledgement we lost: done either way.
                        known.emplace_back(item, std::move(*existing));
                        tx.exec("RELEASE SAVEPOINT exo_dead_letter");
                        continue;
                    }
                }
                if (verdict.clears_gap && !item->key.empty()) clear_gap(tx, group, item->key);
                const OutgoingRecord letter = produce(*item);
                // What replay checks a letter against: committed with the dedup row
                // (or alone, for a letter without one), after Kafka took the letter.
                const auto& r = item->pending.record;
                record_dead_letter(
                    tx, {group, r.topic.value, r.partition.value, r.offset.value, item->key,
                         dead_letter_digest(letter.key, letter.value, letter.headers)});
                tx.exec("RELEASE SAVEPOINT exo_dead_letter");
                produced.push_back(item);
            } catch (const std::exception& e) {
                const Failure failure = classify(e);
                if (failure == Failure::postgres_down) throw;
                tx.exec("ROLLBACK TO SAVEPOINT exo_dead_letter");
                unrecorded(*item, failure, printable_text(e.what()));
            }
        }
        transaction.commit();
    } catch (const std::exception& e) {
        // Nothing of this step is durable (a produced dead letter may be, which
        // makes it at-least-once: the retry finds no row and produces again).
        const Failure failure = classify(e);
        const bool pg_gone = failure == Failure::postgres_down;
        if (pg_gone) postgres_.drop();
        const std::string why = printable_text(e.what());
        const auto delay = pg_gone ? backoff_(postgres_.failed()) : milliseconds(0);
        for (auto* item : dead) {
            if (!item->is_dead_letter()) continue;  // already counted above
            if (pg_gone)
                item->requeue(delay, why);  // a dependency outage: not the record's try
            else
                unrecorded(*item, failure, why);
        }
        return;
    }

    std::vector<CompleteRequest> requests;
    // `existing`: the dedup row it found instead of producing; nullptr: it was produced.
    auto settle = [&](BatchRecord* item, ExistingRow* existing) {
        const auto& r = item->pending.record;
        const auto& verdict = *item->verdict();
        LogContext log_context(r.topic, r.partition, r.offset, item->key, &item->pending.trace);
        if (existing == nullptr) {
            log_.error("dead-lettered {}[{}]@{} (key '{}'): {}", r.topic.value, r.partition.value,
                       r.offset.value, item->key, verdict.reason);
            // What its dedup row stores, and a later copy of its key gets back.
            item->finish(Outcome::dead_lettered, printable_text(verdict.reason));
        } else {
            item->finish_duplicate(Outcome::duplicate_postgres, existing->outcome,
                                   std::move(existing->result),
                                   std::move(existing->applied.fingerprint));
        }
        if (item->token && verdict.record_key) {
            requests.push_back({item->key, *item->token, item->result(), item->stored(),
                                item->stored_fingerprint()});
            item->token.reset();
        }
    };
    for (auto* item : produced) settle(item, nullptr);
    for (auto& [item, existing] : known) settle(item, &existing);
    if (requests.empty()) return;
    leases.hold(batch.open_claims());  // let go first: its renewals' LOST is then ours
    ClaimStore* claims = redis_.claims();
    if (claims == nullptr) return;
    try {
        claims->complete(requests, settings_.completed_ttl);
        redis_.answered();
    } catch (const RedisError& e) {
        log_.warn("could not mark {} claims dead-lettered: {}", requests.size(), e.what());
    }
}

OutgoingRecord DeadLetterPublisher::produce(const BatchRecord& item) {
    const auto& verdict = *item.verdict();
    const std::string topic =
        item.binding ? item.binding->dead_letter_topic : item.pending.record.topic.value + ".dlq";
    // One dead letter at a time, waiting for its acknowledgement: a failure is
    // then this record's alone, and a delivered one is never sent again because
    // a neighbour failed.
    auto send = [&](DeadLetterShape shape) {
        auto letter =
            make_dead_letter(item.pending, topic, settings_.group, verdict.reason, item.key, shape);
        producer().produce(letter);
        try {
            producer().flush(kDeadLetterFlushTimeout);
        } catch (const KafkaError& e) {
            if (e.code() == RD_KAFKA_RESP_ERR__TIMED_OUT) producer().purge();
            throw;
        }
        return letter;
    };
    // The letter's shape is decided before producing, against the producer's
    // message.max.bytes (the relay's: both take kafka.properties): a letter over it
    // would be refused on every try and stall the partition. The reason and
    // coordinates matter more than a copy of a value, key or header Kafka still holds.
    const auto limit = settings_.producer_bytes;
    auto shape = fitting_dead_letter_shape(item.pending, topic, settings_.group, verdict.reason,
                                           item.key, limit);
    for (;;) {
        try {
            return send(shape);
        } catch (const KafkaError& e) {
            // A broker's limit for the dead-letter topic may be lower than the producer's:
            // the next shape, smaller, until the last one.
            if (e.code() != RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
                shape == DeadLetterShape::headers_omitted)
                throw;
            shape = static_cast<DeadLetterShape>(static_cast<int>(shape) + 1);
        }
    }
}

void DeadLetterPublisher::unrecorded(BatchRecord& item, Failure failure, const std::string& why) {
    // The verdict stays: the next try only records it, the handler does not run again.
    auto& p = item.pending;
    const int bound = item.binding ? item.binding->max_attempts : 1;
    const auto& r = p.record;
    LogContext log_context(r.topic, r.partition, r.offset, item.key, &p.trace);
    if (!counts_as_attempt(failure)) {
        // A dependency or another transaction, not this dead letter: wait, uncounted.
        item.requeue(backoff_(1), why);
        return;
    }
    const int failures = ++p.dead_letter_failures;
    stats_.dead_letter_failures++;
    if (decide_dead_letter_failure(failure, failures, bound) != Action::stall) {
        auto delay = backoff_(failures);
        log_.warn(
            "could not record {}[{}]@{} as a dead letter (try {} of {}), retrying in {} ms: {}",
            r.topic.value, r.partition.value, r.offset.value, failures, bound, delay.count(), why);
        item.requeue(delay, why);
        return;
    }
    // Nothing more exo can do alone: stop this partition where everyone sees it,
    // and keep trying slowly so it resumes by itself once the cause is fixed.
    const auto delay = settings_.retry_backoff_max;
    if (!p.stalled)
        log_.error(
            "partition {}[{}] STALLED at offset {} (key '{}'): the record could not be recorded "
            "even as a dead letter after {} tries: {}. Nothing behind it is committed and exo "
            "reports not ready; it retries every {} ms. Fix the cause: the dead-letter topic '{}' "
            "must exist and accept this record, and PostgreSQL must accept its dead-letter row.",
            r.topic.value, r.partition.value, r.offset.value, item.key, failures, why,
            delay.count(), item.binding ? item.binding->dead_letter_topic : r.topic.value + ".dlq");
    p.stalled = true;
    item.requeue(delay, why);
}

}  // namespace exo
