#pragma once
// Records a worker's dead letters (docs/design.md#dead-letters): for each record
// of a batch judged a dead letter, the DEAD_LETTERED dedup row in an open
// transaction, the dead letter produced and acknowledged by Kafka, then COMMIT
// and the Redis claim marked DEAD_LETTERED. A dead letter that cannot be
// recorded is put back with its verdict (its handler never runs again), counted,
// and after max_attempts tries stalls its partition loudly.
//
// Thread-safety: none; the worker's thread only. Its producer is its own, so a
// delivery failure reported during one worker's flush can never be taken for
// (or hidden from) another worker's dead letters. The producer is created at
// the first dead letter: a worker with pipeline.concurrency slots would
// otherwise hold that many idle producers (threads and broker connections).
#include <chrono>
#include <functional>
#include <optional>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "kafka/producer.hpp"
#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/failure_matrix.hpp"
#include "protocol/session_access.hpp"

namespace exo {

// The dead-letter producer's options: the consumer's properties (security settings)
// but the consumer-only ones, and a delivery timeout below the publisher's 10 s flush,
// so a dead letter whose flush gave up has failed for good instead of being delivered
// later, beside the copy the retry produces. The relay's start from these too.
ProducerOptions dead_letter_producer(const std::string& bootstrap, const KafkaConfig& kafka);

// What the publisher reads of exo.yaml, taken once by the runner that builds it.
struct DeadLetterSettings {
    std::string group;                              // kafka.group_id
    std::chrono::milliseconds completed_ttl{};      // claim.completed_ttl_ms
    std::size_t producer_bytes = 0;                 // the largest record the producer sends
    std::chrono::milliseconds retry_backoff_max{};  // pipeline.retry_backoff_max_ms

    static DeadLetterSettings of(const Config& config) {
        return {config.kafka.group_id, config.claim.completed_ttl,
                config.outbox.emit_limits.producer_bytes(), config.pipeline.retry_backoff_max};
    }
};

class DeadLetterPublisher {
public:
    // The sessions are the worker's; `backoff(n)` is the wait after the n-th failure.
    // Never connects; a bad producer property throws KafkaConfigError at the
    // first dead letter (the daemon checks the properties at start-up).
    DeadLetterPublisher(DeadLetterSettings settings, const ProducerOptions& producer,
                        PipelineStats& stats, spdlog::logger& log, PostgresAccess& postgres,
                        ClaimAccess& redis, std::function<std::chrono::milliseconds(int)> backoff);
    DeadLetterPublisher(const DeadLetterPublisher&) = delete;
    DeadLetterPublisher& operator=(const DeadLetterPublisher&) = delete;

    // Every record whose fate is fate::DeadLetter leaves finished (recorded, or
    // found recorded or applied already) or requeued (not recorded this time).
    // `leases` keeps renewing the claims while Kafka and PostgreSQL answer, and
    // lets go of the finished ones before they are marked in Redis
    // (protocol/session_access.hpp). Never throws.
    void publish(Batch& batch, ClaimLeases& leases);

private:
    // Produces one dead letter and waits for its acknowledgement, in the first
    // shape that fits (protocol/dead_letter.hpp); returns the letter as produced.
    // Throws KafkaError.
    OutgoingRecord produce(const BatchRecord& item);
    void unrecorded(BatchRecord& item, Failure failure, const std::string& why);

    const DeadLetterSettings settings_;
    PipelineStats& stats_;
    spdlog::logger& log_;
    PostgresAccess& postgres_;
    ClaimAccess& redis_;
    std::function<std::chrono::milliseconds(int)> backoff_;
    KafkaProducer& producer();  // created on first use

    ProducerOptions producer_options_;
    std::optional<KafkaProducer> producer_;
};

}  // namespace exo
