#pragma once
// One record's state while its batch runs through the passes of docs/design.md
// section 5: what the passes learned about it, and its fate so far.
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
#include "pipeline/pending_record.hpp"

namespace exo {

struct BatchRecord;

// A record's fate in its batch, one alternative per fate, each holding what
// only that fate means: a fate and data that contradict it cannot be written.
// Written only by BatchRecord's member functions below.
namespace fate {
struct Pending {  // still to run
    static constexpr std::string_view name = "pending";
};
// Its key came earlier in the batch: `first`, the batch's first record with
// that key, claims and runs for both; this one is settled after it
// (passes/repeated_keys.hpp), before the hand-back.
struct AwaitsFirst {
    static constexpr std::string_view name = "awaits_first";
    const BatchRecord* first;
};
struct Finished {  // a durable outcome: its offset may be committed
    static constexpr std::string_view name = "finished";
    Outcome outcome;
};
// NACK / retry: back to the front of its lane, which is held for `delay`.
struct Requeue {
    static constexpr std::string_view name = "requeue";
    std::chrono::milliseconds delay;
    std::string why;
};
// Sequence gap: set aside for `delay`; the records behind it go on.
struct Park {
    static constexpr std::string_view name = "park";
    std::chrono::milliseconds delay;
    std::string why;
};
// To the DLQ, then finished. Its verdict is PendingRecord::dead_letter, not
// kept here: it outlives the batch (a failed dead-letter step carries it to the
// record's next batch, where only the recording is left).
struct DeadLetter {
    static constexpr std::string_view name = "dead_letter";
};
}  // namespace fate

using Fate = std::variant<fate::Pending, fate::AwaitsFirst, fate::Finished, fate::Requeue,
                          fate::Park, fate::DeadLetter>;

// For logs and tests: "pending", "requeue", ...
inline std::string_view fate_name(const Fate& f) {
    return std::visit([](const auto& alternative) { return alternative.name; }, f);
}

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
    std::optional<FencingToken> token;  // set while we hold the Redis claim
    // Redis answered DUPLICATE (or dead-lettered) and claim.verify_duplicates
    // took the record to the dedup row instead of skipping it: kept for the whole
    // batch, so a record that runs after all is reported (Claims::complete).
    bool redis_said_duplicate = false;
    // Its key was applied for another payload (finish_postgres_duplicate): a
    // DUPLICATE from Redis followed by a dead letter or duplicate is no contradiction.
    bool key_reused = false;
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
    std::string result;  // handler result, or the stored one

    const TopicPartition partition() const { return pending.record.topic_partition(); }
    const Fate& fate() const { return fate_; }
    bool is_pending() const { return std::holds_alternative<fate::Pending>(fate_); }
    bool is_finished() const { return std::holds_alternative<fate::Finished>(fate_); }
    bool is_dead_letter() const { return std::holds_alternative<fate::DeadLetter>(fate_); }
    // Its outcome once finished; none before.
    std::optional<Outcome> outcome() const {
        if (const auto* finished = std::get_if<fate::Finished>(&fate_)) return finished->outcome;
        return std::nullopt;
    }
    // Why it did not finish (requeued, parked, a dead letter); empty otherwise.
    std::string_view why() const {
        if (const auto* requeued = std::get_if<fate::Requeue>(&fate_)) return requeued->why;
        if (const auto* parked = std::get_if<fate::Park>(&fate_)) return parked->why;
        if (is_dead_letter() && pending.dead_letter) return pending.dead_letter->reason;
        return {};
    }
    // Finished with an outcome that is durable for its key, so a later copy of
    // the key is a duplicate of it: applied, stale, a dead letter with its dedup
    // row, or a duplicate itself. A dead letter without a dedup row (a gap
    // timeout) says nothing of the event: a later copy may still apply.
    bool settled_key() const {
        const bool unrecorded_letter = outcome() == Outcome::dead_lettered && pending.dead_letter &&
                                       !pending.dead_letter->record_key;
        return is_finished() && !unrecorded_letter;
    }
    // Forgets what an aborted transaction decided about this record.
    void reset_to_pending() {
        fate_ = fate::Pending{};
        framework_started = false;
        stored = StoredOutcome::applied;
        stored_fingerprint.clear();
        key_reused = false;
        pending.dead_letter.reset();
        result.clear();
    }
    // Finished with an effect of its own: applied, stale, dead_lettered.
    void finish(Outcome o) {
        fate_ = fate::Finished{o};
        stored = o == Outcome::stale           ? StoredOutcome::stale
                 : o == Outcome::dead_lettered ? StoredOutcome::dead_lettered
                                               : StoredOutcome::applied;
        stored_fingerprint = fingerprint;
    }
    // Finished as a duplicate of a key whose first delivery ended as `first`.
    void finish_duplicate(Outcome o, StoredOutcome first, std::string stored_result) {
        fate_ = fate::Finished{o};
        stored = first;
        result = std::move(stored_result);
    }
    // A later copy of `first`'s key in the same batch: no claim, no handler.
    void await_first(const BatchRecord& first) { fate_ = fate::AwaitsFirst{&first}; }
    void requeue(std::chrono::milliseconds d, std::string why) {
        fate_ = fate::Requeue{d, std::move(why)};
    }
    void park(std::chrono::milliseconds d, std::string why) {
        fate_ = fate::Park{d, std::move(why)};
    }
    // The record is a dead letter; the verdict stays with it until it is recorded.
    void dead_letter(std::string why, bool record_key = true, bool clears_gap = false) {
        fate_ = fate::DeadLetter{};
        pending.dead_letter = DeadLetterVerdict{std::move(why), record_key, clears_gap};
    }
    // A dead letter judged in an earlier batch (PendingRecord::dead_letter):
    // only its recording is left. Throws std::logic_error without a verdict.
    void resume_dead_letter() {
        if (!pending.dead_letter)
            throw std::logic_error("resume_dead_letter: the record carries no verdict");
        fate_ = fate::DeadLetter{};
    }

private:
    // Changed only by the member functions above: a fate and its data change together.
    Fate fate_;
};

}  // namespace exo
