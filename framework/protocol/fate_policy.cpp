#include "protocol/fate_policy.hpp"

#include "core/log_context.hpp"
#include "scheduling/gap_parking.hpp"

namespace exo {

using std::chrono::milliseconds;

FatePolicy::FatePolicy(const PipelineConfig& pipeline, PipelineStats& stats, spdlog::logger& log)
    : stats_(stats),
      log_(log),
      backoff_{pipeline.retry_backoff_initial, pipeline.retry_backoff_max},
      park_initial_(pipeline.retry_backoff_initial),
      rng_(std::random_device{}()) {}

milliseconds FatePolicy::delay(int failures) {
    return backoff_.delay(failures, std::uniform_real_distribution<double>(0, 1)(rng_));
}

void FatePolicy::record_failed(Batch& batch, BatchRecord& record, Failure failure,
                               const std::string& why) {
    const auto& r = record.pending.record;
    LogContext log_context(r.topic, r.partition, r.offset, record.key, &record.pending.trace);
    const int attempts = record.pending.attempts + (counts_as_attempt(failure) ? 1 : 0);
    record.pending.attempts = attempts;
    switch (decide_record_failure(failure, attempts, record.binding->max_attempts)) {
        case Action::dead_letter:
            record.dead_letter(failure == Failure::permanent
                                   ? why
                                   : "gave up after " + std::to_string(attempts) +
                                         " attempts: " + why);
            return;
        case Action::nack:
            record_contended(batch, record, why);
            return;
        case Action::retry:
        case Action::pause:  // not reached: a paused worker's failure never gets here
        case Action::stall:
            break;
    }
    stats_.retries++;
    const auto wait = delay(attempts);
    log_.info("{} attempt {} failed, retrying in {} ms: {}", record.key, attempts, wait.count(),
              why);
    record.requeue(wait, why);
    batch.hold_behind(record);
}

void FatePolicy::record_contended(Batch& batch, BatchRecord& record, const std::string& why) {
    // Like a Redis CONFLICT: another transaction (live, or frozen until the
    // server ends it) holds a row this record needs. Not the record's fault.
    record.pending.nacks++;
    stats_.conflicts++;
    record.requeue(delay(record.pending.nacks), "a row lock is held elsewhere: " + why);
    batch.hold_behind(record);
}

void FatePolicy::claim_conflict(Batch& batch, BatchRecord& record, milliseconds lease_left) {
    // Already held behind a record of its partition NACKed before it: it is not
    // NACKed itself, so neither counted nor backed off further (the other
    // worker's batch holds many keys at once; counting each would make one
    // NACK look like hundreds, and lengthen the next wait of every record
    // behind it).
    if (!record.is_pending()) return;
    record.pending.nacks++;
    stats_.conflicts++;
    // The holder usually finishes long before its lease runs out: back off
    // exponentially, never past the remaining lease.
    const auto wait = std::min(lease_left, delay(record.pending.nacks));
    record.requeue(wait, "claimed by another worker (CONFLICT)");
    batch.hold_behind(record);
}

void FatePolicy::park_for_gap(BatchRecord& record, const std::string& entity,
                              milliseconds gap_timeout, milliseconds waited) {
    // Without jitter: a gap is no contention to spread out, and the records of
    // one entity parked together (a successor run behind a predecessor that did
    // not finish) must come back together, in offset order, to apply in one
    // batch. Jittered, they came back one by one in a random order, each ahead
    // of its predecessor parked again with a longer delay: hundreds of tiny
    // batches for one cascade. Growing toward the gap timeout: a record that
    // waits for its whole gap_timeout costs a dozen transactions, not one a
    // second.
    const auto wait = park_delay(++record.pending.gap_waits, park_initial_, gap_timeout, waited);
    record.park(wait, "waiting for an earlier sequence of " + entity);
}

void FatePolicy::batch_failed(Batch& batch, Failure failure, milliseconds wait,
                              const std::string& why) {
    // A dependency down, or a handler that cannot prepare, is nobody's record's
    // fault: everything waits, uncounted. Anything else failed around the
    // records of the transaction (a SAVEPOINT, a ROLLBACK TO): it counts as an
    // attempt of each of them.
    const bool counted = counts_as_attempt(failure);
    for (auto& record : batch) {
        if (!record.in_transaction || record.committed()) {
            // Settled before the transaction (a Redis duplicate, a bad key, a
            // CONFLICT), or by a transaction that committed: those answers stand.
            if (record.is_pending()) record.requeue(wait, why);
            continue;
        }
        record.reset_to_pending();
        if (!counted) {
            record.requeue(wait, why);
            continue;
        }
        const int attempts = ++record.pending.attempts;
        if (decide_batch_failure(failure, attempts, record.binding->max_attempts) ==
            Action::dead_letter) {
            record.dead_letter("gave up after " + std::to_string(attempts) + " attempts: " + why);
        } else {
            stats_.retries++;
            record.requeue(delay(attempts), why);
        }
    }
}

}  // namespace exo
