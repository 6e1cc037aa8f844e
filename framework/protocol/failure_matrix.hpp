#pragma once
// The failure matrix (docs/design.md#failure-matrix) as code: what any exception a
// record's processing can meet means (classify), and what the pipeline does
// about it (the decide_* functions). Pure: no I/O, no clocks; the worker
// applies the verdicts (delays, requeues, dead letters), and the unit tests
// pin every row down without servers.
#include <exception>
#include <stdexcept>

namespace exo {

// A handler's prepare() failed for a reason other than the connection: none of
// the worker's records can run until it succeeds, and none of them is at fault.
class HandlerPrepareError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Another transaction got to a row first (the first record of a new sequence
// entity, say): like a lock timeout, nobody's fault; the record is NACKed.
class ContentionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One vocabulary for every failure, named for what happens next.
enum class Failure {
    postgres_down,       // connection lost, or COMMIT's answer lost: pause, uncounted
    redis_down,          // Redis unreachable or answering nonsense: pause, uncounted
    dependency_down,     // a handler's DependencyError (its own service down): pause, uncounted
    handler_unprepared,  // a handler's prepare() failed: pause loudly, uncounted
    contention,  // lock timeout, deadlock: another transaction holds the row: NACK, uncounted
    aborted_transaction,  // 25P02: a handler swallowed a database error: counted, retried
    retryable,            // may pass: counted, retried with backoff, then dead-lettered
    permanent,            // can never succeed: dead-lettered at once
};
const char* to_string(Failure f);

// Handler errors (RetryableError, PermanentError, DependencyError), PostgreSQL
// (libpqxx, SQLSTATE classes), Redis (RedisError), HandlerPrepareError,
// CommitRefused; anything else, std::exception or not, is retryable: nothing
// says it cannot pass. KafkaError, a DependencyError too, is retryable: Kafka
// is met only in the dead-letter step, where a refused produce counts as a try
// of its record (bounded, then the partition stalls loudly, docs/design.md#dead-letters).
Failure classify(const std::exception& e);

// Whether the failure is about a dependency rather than the records at hand: the
// batch is put back uncounted and the worker reports not healthy.
bool pauses_the_worker(Failure f);

enum class Action {
    pause,        // put back uncounted until the dependency (or handler) recovers
    nack,         // put back uncounted after a backoff: someone else holds the key
    retry,        // put back, counted, after a backoff
    dead_letter,  // to the dead-letter topic now
    stall,        // cannot even be recorded as a dead letter: stop the partition loudly
};
const char* to_string(Action a);

// A record's own step failed (its savepoint rolled back). `attempts` counts the
// failed tries so far, this one included when it counts.
Action decide_record_failure(Failure f, int attempts, int max_attempts);
// A step around the records failed (a SAVEPOINT, a ROLLBACK TO, a COMMIT that
// names no record): the same for each record concerned, but nothing is permanent
// about a record that was not itself at fault.
Action decide_batch_failure(Failure f, int attempts, int max_attempts);
// Recording a dead letter failed (its row, its produce, its COMMIT) for the
// `failures`-th time.
Action decide_dead_letter_failure(Failure f, int failures, int max_attempts);
// Whether a failure counts as an attempt of the record(s) concerned.
bool counts_as_attempt(Failure f);

}  // namespace exo
