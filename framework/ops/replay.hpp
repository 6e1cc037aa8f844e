#pragma once
// `exo dlq replay`: process a dead-lettered record once more, exactly once
// (docs/operations.md, "Replaying dead letters", has the argument). Per key:
//   0. find the record to re-produce, and check it derives the same key;
//      nothing is changed if it cannot be found (a clear error instead)
//   1. PostgreSQL, one statement: the DEAD_LETTERED row becomes a replay ticket
//      (the key is new to the daemon again)          failpoint replay_after_ticket
//   2. Redis: the claim is deleted (nothing to do with claim.store: postgres)
//                                                     failpoint replay_after_claim_forgotten
//   3. Kafka: the record is produced to its original topic and partition with
//      exo-replayed-from, and acknowledged           failpoint replay_after_produce
//   4. PostgreSQL: the ticket records that it was sent
// A crash anywhere leaves either the row (nothing happened) or the ticket, from
// which running the replay again resumes at step 2. The dedup row, inserted by
// whichever copy of the key the daemon processes first, keeps every extra copy
// a duplicate.
//
// A dead letter without a dedup row (a gap timeout, or a keyless record whose
// record derives a key now) has no row to move: step 1 opens the ticket from
// the letter instead, and only while the key has no dedup row; the rest is the
// same, and so is the argument.
//
// Thread-safety: none; one replayer per command.
#include <functional>
#include <string>
#include <vector>

#include <pqxx/connection>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "core/key_derivation.hpp"
#include "kafka/producer.hpp"
#include "kafka/topic_reader.hpp"
#include "ops/dead_letter_topics.hpp"
#include "ops/ops_records.hpp"
#include "redis/redis_router.hpp"

namespace exo {

struct ReplayServices {
    const Config& config;
    pqxx::connection& postgres;
    RedisRouter* redis;  // nullptr with claim.store: postgres: no claim to forget
    TopicReader& reader;
    DeadLetterTopics& letters;
    KafkaProducer& producer;
    Failpoints& failpoints;
    // Replay a letter exo has no record of writing (one written before
    // sql/0012_dead_letter_digest.sql), after `warn` says so; a letter whose record
    // says another digest is refused all the same.
    bool trust_unverified = false;
    std::function<void(const std::string&)> warn = [](const std::string&) {};
};

// The record of a dead letter cannot be found any more: not in its dead-letter
// topic (or only without its value) and not at its coordinates in the source
// topic. Nothing was changed. A run-time failure (exit 1).
class ReplaySourceGone : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// exo will not replay this dead letter without a dedup row: its record still
// derives no key (the daemon would dead-letter it again at once, and nothing
// could keep it exactly once), or it is older than the dedup rows' retention
// (its key's row may have been pruned). Nothing was changed.
class ReplayRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The letter found for an entry is not one exo wrote as it is now: the SHA-256 of
// its key and value is not the one exo recorded when it wrote the record's dead
// letter (pg/dead_letter_record.hpp), or exo recorded none (a letter produced by
// someone else, or written before exo recorded digests: --trust-unverified).
// Nothing was changed. The message names the key, the coordinates and both digests.
class ReplayUnverified : public ReplayRefused {
public:
    using ReplayRefused::ReplayRefused;
};

class DeadLetterReplayer {
public:
    explicit DeadLetterReplayer(ReplayServices services) : s_(services) {}

    // Replays `entry` (a DEAD_LETTERED row, a pending replay, or a dead letter
    // without a dedup row: no_dedup_row, no_key), or with `dry_run` only finds
    // its record and says what would be done.
    // Throws ReplaySourceGone, ReplayRefused (ReplayUnverified: its letter is not
    // one exo recorded writing); UsageError when the entry's topic has no binding in
    // the config or the replayed record would derive another key (a
    // `coordinates` binding); pqxx, RedisError and KafkaError for failures of
    // the servers (the replay is then resumed by running it again).
    ReplayResult replay(const DeadLetterEntry& entry, bool dry_run);

    // The binding's entity and sequence of the entry's record (found as replay
    // finds it), or nullopt for a binding without a sequence. Throws
    // ReplaySourceGone; PermanentError if the record has no readable sequence.
    std::optional<SequenceValue> sequence_of(const DeadLetterEntry& entry);

private:
    OutgoingRecord find_record(const DeadLetterEntry& entry, const BindingConfig& binding,
                               std::string& source);

    // Throws ReplayUnverified unless `letter` is the one exo recorded writing for
    // the entry's record (or exo recorded none and trust_unverified is set).
    void verify_letter(const Record& letter, const DeadLetterEntry& entry);

    // The key a no_key entry's record derives now; ReplayRefused if none.
    std::string derived_key(const BindingConfig& binding, const OutgoingRecord& out) const;

    ReplayServices s_;
};

}  // namespace exo
