#include "protocol/failure_matrix.hpp"

#include <pqxx/pqxx>

#include <exo/errors.hpp>

#include "kafka/kafka_error.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/pg_errors.hpp"
#include "redis/redis_error.hpp"

namespace exo {

Failure classify(const std::exception& e) {
    if (dynamic_cast<const HandlerPrepareError*>(&e)) return Failure::handler_unprepared;
    if (dynamic_cast<const RedisError*>(&e)) return Failure::redis_down;
    if (dynamic_cast<const KafkaError*>(&e)) return Failure::retryable;
    // errors.hpp promises a handler's DependencyError puts the batch back uncounted.
    if (dynamic_cast<const DependencyError*>(&e)) return Failure::dependency_down;
    if (dynamic_cast<const ContentionError*>(&e)) return Failure::contention;
    if (dynamic_cast<const PermanentError*>(&e)) return Failure::permanent;
    if (dynamic_cast<const RetryableError*>(&e)) return Failure::retryable;
    if (dynamic_cast<const CommitRefused*>(&e)) return Failure::aborted_transaction;
    if (dynamic_cast<const pqxx::failure*>(&e) == nullptr) return Failure::retryable;
    if (is_aborted_transaction(e)) return Failure::aborted_transaction;
    switch (classify_pg_error(e)) {
        case PgFailure::connection_lost:
        case PgFailure::outcome_unknown:
            return Failure::postgres_down;
        case PgFailure::contention:
            return Failure::contention;
        case PgFailure::permanent:
            return Failure::permanent;
        case PgFailure::retryable:
            return Failure::retryable;
    }
    return Failure::retryable;
}

bool pauses_the_worker(Failure f) {
    return f == Failure::postgres_down || f == Failure::redis_down ||
           f == Failure::dependency_down || f == Failure::handler_unprepared;
}

bool counts_as_attempt(Failure f) {
    return !pauses_the_worker(f) && f != Failure::contention;
}

Action decide_record_failure(Failure f, int attempts, int max_attempts) {
    if (pauses_the_worker(f)) return Action::pause;
    if (f == Failure::contention) return Action::nack;
    if (f == Failure::permanent) return Action::dead_letter;
    return attempts >= max_attempts ? Action::dead_letter : Action::retry;
}

Action decide_batch_failure(Failure f, int attempts, int max_attempts) {
    if (pauses_the_worker(f)) return Action::pause;
    if (f == Failure::contention) return Action::nack;
    return attempts >= max_attempts ? Action::dead_letter : Action::retry;
}

Action decide_dead_letter_failure(Failure f, int failures, int max_attempts) {
    if (pauses_the_worker(f)) return Action::pause;
    if (f == Failure::contention) return Action::nack;
    return failures >= max_attempts ? Action::stall : Action::retry;
}

const char* to_string(Failure f) {
    switch (f) {
        case Failure::postgres_down:
            return "PostgreSQL unreachable";
        case Failure::redis_down:
            return "Redis unreachable";
        case Failure::dependency_down:
            return "a handler's dependency unavailable";
        case Failure::handler_unprepared:
            return "handler cannot prepare";
        case Failure::contention:
            return "row lock held elsewhere";
        case Failure::aborted_transaction:
            return "transaction aborted by a swallowed error";
        case Failure::retryable:
            return "retryable";
        case Failure::permanent:
            return "permanent";
    }
    return "?";
}

const char* to_string(Action a) {
    switch (a) {
        case Action::pause:
            return "pause";
        case Action::nack:
            return "nack";
        case Action::retry:
            return "retry";
        case Action::dead_letter:
            return "dead-letter";
        case Action::stall:
            return "stall";
    }
    return "?";
}

}  // namespace exo
