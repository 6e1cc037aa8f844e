#pragma once
// One record's state while its batch runs through the protocol steps.
#include <chrono>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "core/payload.hpp"
#include "core/types.hpp"
#include "pipeline/pending_record.hpp"

namespace exo {

enum class Fate {
    pending,      // still to run
    finished,     // durable outcome: its offset may be committed
    requeue,      // NACK / retry: back to the front of its partition after `delay`
    park,         // sequence gap: set aside for `delay`; records behind it go on
    dead_letter,  // to the DLQ with `error`, then finished
};

enum class Outcome { none, applied, duplicate_redis, duplicate_postgres, stale, dead_lettered };

struct BatchItem {
    explicit BatchItem(PendingRecord&& p) : pending(std::move(p)), payload(pending.record.value) {}
    BatchItem(const BatchItem&) = delete;  // payload points into pending.record

    PendingRecord pending;
    JsonPayload payload;
    const BindingConfig* binding = nullptr;
    std::string key;                    // empty if it could not be derived
    std::optional<FencingToken> token;  // set while we hold the Redis claim
    Fate fate = Fate::pending;
    Outcome outcome = Outcome::none;
    bool previously_dead_lettered = false;  // the dedup row says DEAD_LETTERED
    // Dead letters normally record the key as DEAD_LETTERED (row and claim), so
    // redeliveries are not dead-lettered again. A sequence-gap timeout says
    // nothing about the event itself: a later copy of it may still apply.
    bool record_dead_letter_key = true;
    std::string result;                  // handler result, or the stored one
    std::string error;                   // why requeued / dead-lettered
    std::chrono::milliseconds delay{0};  // requeue: hold the partition this long

    const TopicPartition partition() const { return pending.record.topic_partition(); }
    // Forgets what an aborted transaction decided about this record.
    void reset_to_pending() {
        fate = Fate::pending;
        outcome = Outcome::none;
        previously_dead_lettered = false;
        record_dead_letter_key = true;
        result.clear();
        error.clear();
        delay = std::chrono::milliseconds(0);
    }
    void finish(Outcome o) {
        fate = Fate::finished;
        outcome = o;
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
    void dead_letter(std::string why) {
        fate = Fate::dead_letter;
        error = std::move(why);
    }
};

}  // namespace exo
