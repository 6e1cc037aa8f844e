#pragma once
// One record's state while its batch runs through the passes of docs/design.md
// section 5: what the passes learned about it, and its fate so far.
#include <any>
#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include <exo/types.hpp>
#include "config/config.hpp"
#include "core/fencing_token.hpp"
#include "core/outcome.hpp"
#include "core/payload.hpp"
#include "pipeline/pending_record.hpp"

namespace exo {

enum class Fate {
    pending,       // still to run
    awaits_first,  // its key came earlier in the batch: ends with that first copy (section 5.1)
    finished,      // durable outcome: its offset may be committed
    requeue,       // NACK / retry: back to the front of its partition after `delay`
    park,          // sequence gap: set aside for `delay`; records behind it go on
    dead_letter,   // to the DLQ with `error`, then finished
};

struct BatchRecord {
    BatchRecord(PendingRecord&& p, std::size_t position_in_batch)
        : pending(std::move(p)), payload(pending.record.value), position(position_in_batch) {}
    BatchRecord(const BatchRecord&) = delete;  // payload points into pending.record

    PendingRecord pending;
    JsonPayload payload;
    const std::size_t position;  // in its batch, which is in partition order
    const BindingConfig* binding = nullptr;
    std::string key;  // empty if it could not be derived
    // record_fingerprint() of this copy (empty if its key could not be derived),
    // and of the copy the key's dedup row was written for, once known: its own
    // when it finishes with an effect of its own. Written to its Redis claim.
    std::string fingerprint;
    std::string stored_fingerprint;
    // Fate::awaits_first: the batch's first record with this key, which claims
    // and runs for both; this one is settled after it (passes/repeated_keys.hpp).
    const BatchRecord* first_copy = nullptr;
    std::optional<FencingToken> token;  // set while we hold the Redis claim
    // Redis answered DUPLICATE (or dead-lettered) and claim.verify_duplicates
    // took the record to the dedup row instead of skipping it: kept for the whole
    // batch, so a record that runs after all is reported (Claims::complete).
    bool redis_said_duplicate = false;
    // Its key was applied for another payload (finish_postgres_duplicate): a
    // DUPLICATE from Redis followed by a dead letter or duplicate is no contradiction.
    bool key_reused = false;
    Fate fate = Fate::pending;
    std::optional<Outcome> outcome;  // set with Fate::finished
    // What the key's dedup row says (or will say, once committed): for a
    // duplicate, what its first delivery did. Written to its Redis claim.
    StoredOutcome stored = StoredOutcome::applied;
    bool in_transaction = false;  // taken into this batch's transaction (not settled by Redis)
    bool committed = false;       // ... and that transaction committed: its fate is durable
    bool handler_ran = false;     // handle() was called in this batch (a re-run is a rerun)
    // The set-based start of its transaction wrote its dedup row and moved its
    // sequence: only its handler is left to run (docs/design.md section 4.1).
    bool framework_started = false;
    // What its handler's before_transaction() handed over (HandlerContext::handed_over()),
    // or what it threw, rethrown where handle() would run. Both kept through the
    // batch's re-runs: the work outside the transaction is done once per batch.
    std::any handed_over;
    std::exception_ptr outside_failure;
    std::string result;                  // handler result, or the stored one
    std::string error;                   // why requeued / dead-lettered
    std::chrono::milliseconds delay{0};  // requeue: hold the partition this long

    const TopicPartition partition() const { return pending.record.topic_partition(); }
    // Finished with an outcome that is durable for its key, so a later copy of
    // the key is a duplicate of it: applied, stale, a dead letter with its dedup
    // row, or a duplicate itself. A dead letter without a dedup row (a gap
    // timeout) says nothing of the event: a later copy may still apply.
    bool settled_key() const {
        const bool unrecorded_letter = outcome == Outcome::dead_lettered && pending.dead_letter &&
                                       !pending.dead_letter->record_key;
        return fate == Fate::finished && !unrecorded_letter;
    }
    // Forgets what an aborted transaction decided about this record.
    void reset_to_pending() {
        fate = Fate::pending;
        framework_started = false;
        outcome.reset();
        stored = StoredOutcome::applied;
        stored_fingerprint.clear();
        key_reused = false;
        pending.dead_letter.reset();
        result.clear();
        error.clear();
        delay = std::chrono::milliseconds(0);
    }
    // Finished with an effect of its own: applied, stale, dead_lettered.
    void finish(Outcome o) {
        fate = Fate::finished;
        outcome = o;
        stored = o == Outcome::stale           ? StoredOutcome::stale
                 : o == Outcome::dead_lettered ? StoredOutcome::dead_lettered
                                               : StoredOutcome::applied;
        stored_fingerprint = fingerprint;
    }
    // Finished as a duplicate of a key whose first delivery ended as `first`.
    void finish_duplicate(Outcome o, StoredOutcome first, std::string stored_result) {
        fate = Fate::finished;
        outcome = o;
        stored = first;
        result = std::move(stored_result);
    }
    // A later copy of `first`'s key in the same batch: no claim, no handler.
    void await_first(const BatchRecord& first) {
        fate = Fate::awaits_first;
        first_copy = &first;
    }
    void requeue(std::chrono::milliseconds d, std::string why) {
        fate = Fate::requeue;
        delay = d;
        error = std::move(why);
    }
    void park(std::chrono::milliseconds d, std::string why) {
        fate = Fate::park;
        delay = d;
        error = std::move(why);
    }
    // The record is a dead letter; the verdict stays with it until it is recorded.
    void dead_letter(std::string why, bool record_key = true, bool clears_gap = false) {
        fate = Fate::dead_letter;
        error = why;
        pending.dead_letter = DeadLetterVerdict{std::move(why), record_key, clears_gap};
    }
};

}  // namespace exo
