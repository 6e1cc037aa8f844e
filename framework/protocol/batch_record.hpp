#pragma once
// One record's state while its batch runs through the steps
// (docs/design.md#per-record), split by lifetime: what the steps learned about
// it for this batch, and what was decided about it (its fate and its data).
#include <any>
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include <exo/types.hpp>
#include "config/config.hpp"
#include "core/fencing_token.hpp"
#include "core/outcome.hpp"
#include "core/payload.hpp"
#include "scheduling/pending_record.hpp"

namespace exo {

struct BatchRecord;

// A record's fate in its batch, one alternative per fate, each holding what
// only that fate means: a fate and data that contradict it cannot be written.
// Written only by BatchRecord's member functions below.
namespace fate {
struct Pending {  // still to run
    static constexpr std::string_view name = "pending";
    friend bool operator==(const Pending&, const Pending&) = default;
};
// Its key came earlier in the batch: `first`, the batch's first record with
// that key, claims and runs for both; this one is settled after it
// (steps/repeated_keys.hpp), before the hand-back.
struct AwaitsFirst {
    static constexpr std::string_view name = "awaits_first";
    const BatchRecord* first;
    friend bool operator==(const AwaitsFirst&, const AwaitsFirst&) = default;
};
struct Finished {  // a durable outcome: its offset may be committed
    static constexpr std::string_view name = "finished";
    Outcome outcome;
    friend bool operator==(const Finished&, const Finished&) = default;
};
// NACK / retry: back to the front of its lane, which is held for `delay`.
struct Requeue {
    static constexpr std::string_view name = "requeue";
    std::chrono::milliseconds delay;
    std::string why;
    friend bool operator==(const Requeue&, const Requeue&) = default;
};
// Sequence gap: set aside for `delay`; the records behind it go on.
struct Park {
    static constexpr std::string_view name = "park";
    std::chrono::milliseconds delay;
    std::string why;
    friend bool operator==(const Park&, const Park&) = default;
};
// To the DLQ, then finished. Its verdict is Decision::dead_letter, not kept
// here: it outlives this fate (a dead letter's finished outcome still says
// whether its key was recorded), and a failed dead-letter step carries it to
// the record's next batch (BatchRecord::leave_batch).
struct DeadLetter {
    static constexpr std::string_view name = "dead_letter";
    friend bool operator==(const DeadLetter&, const DeadLetter&) = default;
};
}  // namespace fate

using Fate = std::variant<fate::Pending, fate::AwaitsFirst, fate::Finished, fate::Requeue,
                          fate::Park, fate::DeadLetter>;

// For logs and tests: "pending", "requeue", ...
inline std::string_view fate_name(const Fate& f) {
    return std::visit([](const auto& alternative) { return alternative.name; }, f);
}

// A record's state has three lifetimes, each its own type:
// - across batches, PendingRecord: what its tries so far have counted (attempts,
//   NACKs, gap waits, dead-letter step failures) and a dead-letter verdict it
//   carries into its next batch;
// - one batch, BatchRecord's own fields: its key, binding, claim token and
//   fingerprint, what the outside call handed over, what Redis answered, whether
//   its handler ran and whether it went into the batch's transaction;
// - one transaction try, Decision below: what was decided about it.
//
// What the batch decided about a record: its fate and the data that go with
// it. Decided before the transaction (Redis's answer, a bad key, a later copy
// of a key) or by a transaction try. A try that rolls back discards it whole
// (BatchRecord::reset_to_pending), so a field added here is forgotten with the
// try without a reset naming it. Written only by BatchRecord's member functions.
struct Decision {
    Fate fate;
    // What the key's dedup row says (or will say, once committed): for a
    // duplicate, what its first delivery did. Written to its Redis claim.
    StoredOutcome stored = StoredOutcome::applied;
    std::string result;  // handler result, or the stored one
    // record_fingerprint() of the copy the key's dedup row was written for, once
    // known: its own when it finishes with an effect of its own. Written to its
    // Redis claim.
    std::string stored_fingerprint;
    // Its key was applied for another payload (finish_postgres_duplicate): a
    // DUPLICATE from Redis followed by a dead letter or duplicate is no contradiction.
    bool key_reused = false;
    // The set-based start of its transaction wrote its dedup row and moved its
    // sequence: only its handler is left to run
    // (docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based).
    bool framework_started = false;
    // Why it is a dead letter: set with that fate and kept once it is recorded
    // (a finished dead letter's settled_key() reads record_key). Carried to its
    // next batch by leave_batch() if its dead-letter step failed.
    std::optional<DeadLetterVerdict> dead_letter;
    // The transaction that decided this committed: durable, never discarded.
    bool committed = false;

    friend bool operator==(const Decision&, const Decision&) = default;
};

struct BatchRecord {
    BatchRecord(PendingRecord&& p, std::size_t position_in_batch)
        : pending(std::move(p)), payload(pending.record.value), position(position_in_batch) {}
    BatchRecord(const BatchRecord&) = delete;  // payload points into pending.record

    PendingRecord pending;  // across batches
    // The rest of its public fields live for this batch: a rollback keeps them.
    JsonPayload payload;
    const std::size_t position;  // in its batch, which is in partition order
    const BindingConfig* binding = nullptr;
    std::string key;  // empty if it could not be derived
    // record_fingerprint() of this copy (empty if its key could not be derived).
    std::string fingerprint;
    std::optional<FencingToken> token;  // set while we hold the Redis claim
    // Redis answered DUPLICATE (or dead-lettered) and claim.verify_duplicates
    // took the record to the dedup row instead of skipping it: kept for the whole
    // batch, so a record that runs after all is reported (Claims::complete).
    bool redis_said_duplicate = false;
    bool in_transaction = false;  // taken into this batch's transaction (not settled by Redis)
    bool handler_ran = false;     // handle() was called in this batch (a re-run is a rerun)
    // What its handler's before_transaction() handed over (HandlerContext::handed_over()),
    // or what it threw, rethrown where handle() would run. Both kept through the
    // batch's re-runs: the work outside the transaction is done once per batch.
    std::any handed_over;
    std::exception_ptr outside_failure;

    const TopicPartition partition() const { return pending.record.topic_partition(); }

    // What was decided (Decision's fields say what each means).
    const Decision& decision() const { return decision_; }
    const Fate& fate() const { return decision_.fate; }
    StoredOutcome stored() const { return decision_.stored; }
    const std::string& result() const { return decision_.result; }
    const std::string& stored_fingerprint() const { return decision_.stored_fingerprint; }
    bool key_reused() const { return decision_.key_reused; }
    bool framework_started() const { return decision_.framework_started; }
    const std::optional<DeadLetterVerdict>& verdict() const { return decision_.dead_letter; }
    bool committed() const { return decision_.committed; }

    bool is_pending() const { return std::holds_alternative<fate::Pending>(fate()); }
    bool is_finished() const { return std::holds_alternative<fate::Finished>(fate()); }
    bool is_dead_letter() const { return std::holds_alternative<fate::DeadLetter>(fate()); }
    // Its outcome once finished; none before.
    std::optional<Outcome> outcome() const {
        if (const auto* finished = std::get_if<fate::Finished>(&fate())) return finished->outcome;
        return std::nullopt;
    }
    // Why it did not finish (requeued, parked, a dead letter); empty otherwise.
    std::string_view why() const {
        if (const auto* requeued = std::get_if<fate::Requeue>(&fate())) return requeued->why;
        if (const auto* parked = std::get_if<fate::Park>(&fate())) return parked->why;
        if (is_dead_letter() && verdict()) return verdict()->reason;
        return {};
    }
    // Finished with an outcome that is durable for its key, so a later copy of
    // the key is a duplicate of it: applied, stale, a dead letter with its dedup
    // row, or a duplicate itself. A dead letter without a dedup row (a gap
    // timeout) says nothing of the event: a later copy may still apply.
    bool settled_key() const {
        const bool unrecorded_letter =
            outcome() == Outcome::dead_lettered && verdict() && !verdict()->record_key;
        return is_finished() && !unrecorded_letter;
    }

    // Forgets what an aborted transaction decided about this record: all of its
    // Decision. What the batch and the record's earlier tries learned stays
    // (its key, token, handed_over, attempts, a verdict it carried in).
    void reset_to_pending() { decision_ = {}; }
    // Finished with an effect of its own (applied, stale, dead_lettered), and
    // the result its dedup row stores.
    void finish(Outcome o, std::string own_result = {}) {
        decision_.fate = fate::Finished{o};
        decision_.stored = o == Outcome::stale           ? StoredOutcome::stale
                           : o == Outcome::dead_lettered ? StoredOutcome::dead_lettered
                                                         : StoredOutcome::applied;
        decision_.result = std::move(own_result);
        decision_.stored_fingerprint = fingerprint;
    }
    // Finished as a duplicate of a key whose first delivery ended as `first`,
    // stored `stored_result`, and was the copy of `first_fingerprint` (empty if unknown).
    void finish_duplicate(Outcome o, StoredOutcome first, std::string stored_result,
                          std::string first_fingerprint = {}) {
        decision_.fate = fate::Finished{o};
        decision_.stored = first;
        decision_.result = std::move(stored_result);
        decision_.stored_fingerprint = std::move(first_fingerprint);
    }
    // A later copy of `first`'s key in the same batch: no claim, no handler.
    void await_first(const BatchRecord& first) { decision_.fate = fate::AwaitsFirst{&first}; }
    void requeue(std::chrono::milliseconds d, std::string why) {
        decision_.fate = fate::Requeue{d, std::move(why)};
    }
    void park(std::chrono::milliseconds d, std::string why) {
        decision_.fate = fate::Park{d, std::move(why)};
    }
    // The record is a dead letter; the verdict stays with it until it is recorded.
    void dead_letter(std::string why, bool record_key = true, bool clears_gap = false) {
        decision_.fate = fate::DeadLetter{};
        decision_.dead_letter = DeadLetterVerdict{std::move(why), record_key, clears_gap};
    }
    // A dead letter judged before this batch (PendingRecord::dead_letter): only
    // its recording is left. Throws std::logic_error without a verdict.
    void resume_dead_letter() {
        if (!pending.dead_letter)
            throw std::logic_error("resume_dead_letter: the record carries no verdict");
        decision_.fate = fate::DeadLetter{};
        decision_.dead_letter = pending.dead_letter;
    }
    // Its key was applied for another payload (on_key_reuse: log or dead_letter).
    void note_key_reused() { decision_.key_reused = true; }
    // The set-based start wrote its dedup row and moved its sequence.
    void note_framework_started() { decision_.framework_started = true; }
    // The transaction that decided its fate committed.
    void note_committed() { decision_.committed = true; }

    // What the record takes to its next batch, moved out (the record is spent):
    // its PendingRecord, with the dead-letter verdict this batch reached, if
    // any, so that only its recording is left there (a failed dead-letter step).
    PendingRecord leave_batch() {
        if (decision_.dead_letter) pending.dead_letter = decision_.dead_letter;
        return std::move(pending);
    }

private:
    // Changed only by the member functions above: a fate and its data change together.
    Decision decision_;
};

}  // namespace exo
