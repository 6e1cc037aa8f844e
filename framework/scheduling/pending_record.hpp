#pragma once
#include <chrono>
#include <optional>
#include <string>

#include <exo/record.hpp>
#include <exo/trace.hpp>
#include "core/trace_context.hpp"
#include "scheduling/record_limits.hpp"

namespace exo {

// Why a record goes to its dead-letter topic, decided once and kept across
// retries of the dead-letter step, so its handler never runs again.
struct DeadLetterVerdict {
    std::string reason;
    // Dead letters normally record the key as DEAD_LETTERED (dedup row and claim),
    // so redeliveries are not dead-lettered again. A sequence-gap timeout says
    // nothing about the event itself (a later copy may still apply), and a record
    // without a storable key has nothing to record: both are false.
    bool record_key = true;
    // A strict-sequence gap timed out: its exo_sequence_gaps row goes with it.
    bool clears_gap = false;

    friend bool operator==(const DeadLetterVerdict&, const DeadLetterVerdict&) = default;
};

// The records that run one after another (bindings[].ordering): a partition's
// records of one ordering key. Under ordering: partition the key is empty, so
// the lane is the whole partition. Converts from a partition: its whole lane.
struct Lane {
    Lane(TopicPartition p, std::string k = {}) : partition(std::move(p)), key(std::move(k)) {}
    TopicPartition partition;
    std::string key;  // the record key or sequence entity; empty: none
    friend auto operator<=>(const Lane&, const Lane&) = default;
};

// A record whose outcome is durable (or that Kafka no longer has): its offset
// may be committed past.
struct FinishedOffset {
    TopicPartition partition;
    Offset offset;
};

// A polled record on its way through the pipeline, with what the retries so
// far have learned about it: the part of its state that lives across batches
// (batch_record.hpp: the parts that live for one batch and one transaction try).
struct PendingRecord {
    Record record;
    // Its lane's key, decided once by the daemon from the binding's ordering.
    std::string ordering_key{};
    // Its trace for this delivery, decided once so its retries, log lines, emits
    // and dead letter share one trace id and span id.
    TraceContext trace = start_trace(record);
    // Failed tries, each bounded by the binding's max_attempts: the handler failed
    // retryably, or a step around it failed (SAVEPOINT, COMMIT) for this record.
    int attempts = 0;
    int nacks = 0;      // times another owner held the key (CONFLICT, lock timeout)
    int gap_waits = 0;  // times parked for a missing predecessor
    // Holds one of its partition's parked places (WorkerInbox's bound,
    // pipeline.max_parked_per_partition): from the finish_batch that first
    // parked it while it is parked or back in a batch from there; a record put
    // back in its lane's queue gives its place up.
    bool parked = false;
    std::chrono::steady_clock::time_point polled_at = std::chrono::steady_clock::now();
    // A verdict it carries into its next batch, where only the dead-letter step
    // is left: judged before any batch (too many headers at poll, a park the
    // inbox refused) or by a batch whose dead-letter step failed
    // (BatchRecord::leave_batch). A batch's own verdict is BatchRecord's until then.
    std::optional<DeadLetterVerdict> dead_letter{};
    int dead_letter_failures = 0;  // tries to record the verdict that failed
    bool stalled = false;          // dead_letter_failures reached the bound: reported once
    // Its batch's COMMIT failed without saying which record was at fault: run it
    // in a transaction of its own, so a failure is its own and counts for it alone.
    bool solo = false;
    // Headers dropped at poll for being over pipeline.max_headers_per_record
    // (record_limits.hpp): its dead letter says how many.
    std::size_t headers_omitted = 0;
    // What flow control counts for it (memory_bytes(), record_limits.hpp), set
    // when the poll thread hands it to a worker (WorkerInbox::push) and fixed from
    // then on, so what the inbox adds at a push it subtracts at a take.
    std::size_t bytes = 0;

    Lane lane() const { return {record.topic_partition(), ordering_key}; }
};

}  // namespace exo
