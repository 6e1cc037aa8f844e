// The failure matrix (docs/design.md#failure-matrix) as pure decisions:
// protocol/failure_matrix.hpp. One table row per matrix row that needs no server;
// the integration tests prove the same rows end to end.
#include <doctest/doctest.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include <exo/errors.hpp>

#include "kafka/kafka_error.hpp"
#include "pg/explicit_transaction.hpp"
#include "protocol/failure_matrix.hpp"
#include "redis/redis_error.hpp"

using namespace exo;

namespace {

pqxx::sql_error sql(const char* sqlstate) {
    return pqxx::sql_error("ERROR: from the test", "SELECT 1", sqlstate);
}

}  // namespace

TEST_SUITE("failure matrix") {
    TEST_CASE("every error exo can meet is classified by what happens next") {
        const auto check = [](const std::exception& e, Failure expected, const char* what) {
            CAPTURE(what);
            CHECK(to_string(classify(e)) == std::string(to_string(expected)));
        };
        check(RetryableError("later"), Failure::retryable, "a handler's RetryableError");
        check(PermanentError("never"), Failure::permanent, "a handler's PermanentError");
        check(std::runtime_error("anything"), Failure::retryable, "any other exception");
        check(pqxx::broken_connection("gone"), Failure::postgres_down, "a lost connection");
        check(pqxx::in_doubt_error("COMMIT sent, answer lost"), Failure::postgres_down,
              "a COMMIT whose answer was lost");
        check(sql("08006"), Failure::postgres_down, "SQLSTATE class 08");
        check(sql("57P01"), Failure::postgres_down, "admin shutdown");
        check(sql("40001"), Failure::retryable, "a serialization failure");
        check(sql("40P01"), Failure::contention, "a deadlock (SQLSTATE)");
        check(pqxx::deadlock_detected("deadlock detected"), Failure::contention,
              "a deadlock (as libpqxx throws it)");
        check(pqxx::serialization_failure("could not serialize"), Failure::retryable,
              "a serialization failure (as libpqxx throws it)");
        check(sql("23505"), Failure::retryable, "a unique violation");
        check(sql("22P02"), Failure::permanent, "invalid input syntax (class 22)");
        check(sql("22021"), Failure::permanent, "invalid UTF-8 (class 22)");
        check(sql("55P03"), Failure::contention, "lock_timeout");
        check(sql("25P02"), Failure::aborted_transaction, "a statement after a swallowed error");
        check(CommitRefused("aborted"), Failure::aborted_transaction,
              "COMMIT of an aborted transaction");
        check(RedisIoError("down"), Failure::redis_down, "Redis unreachable");
        check(RedisReplyError("nonsense"), Failure::redis_down, "Redis answering nonsense");
        check(HandlerPrepareError("no table"), Failure::handler_unprepared,
              "a handler's prepare() failing");
        check(DependencyError("the payment service is down"), Failure::dependency_down,
              "a handler's DependencyError (errors.hpp: put back uncounted)");
        check(KafkaError(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "producing a dead letter", true),
              Failure::retryable, "Kafka refusing a dead letter (a try of that record)");
    }

    TEST_CASE("a handler's DependencyError puts the batch back uncounted, as errors.hpp says") {
        const Failure f = classify(DependencyError("the payment service is down"));
        CHECK(pauses_the_worker(f));
        CHECK_FALSE(counts_as_attempt(f));
        CHECK(decide_record_failure(f, 99, 5) == Action::pause);
        CHECK(decide_batch_failure(f, 99, 5) == Action::pause);
    }

    TEST_CASE("a deadlock is contention: NACKed, never counted, so it cannot dead-letter") {
        const Failure f = classify(pqxx::deadlock_detected("deadlock detected"));
        CHECK_FALSE(counts_as_attempt(f));
        CHECK(decide_record_failure(f, 99, 5) == Action::nack);
        CHECK(decide_batch_failure(f, 99, 5) == Action::nack);
    }

    TEST_CASE("each failure-matrix row decides the same for a record's own step") {
        struct Row {
            const char* row;
            Failure failure;
            int attempts;  // this one included
            Action expected;
        };
        const std::vector<Row> rows = {
            {"CONFLICT-like: a row lock held elsewhere is NACKed", Failure::contention, 0,
             Action::nack},
            {"a retryable handler failure is retried", Failure::retryable, 1, Action::retry},
            {"... until max_attempts, then dead-lettered", Failure::retryable, 5,
             Action::dead_letter},
            {"a permanent failure is dead-lettered at once", Failure::permanent, 1,
             Action::dead_letter},
            {"a swallowed database error is retried", Failure::aborted_transaction, 1,
             Action::retry},
            {"... and dead-lettered at max_attempts", Failure::aborted_transaction, 5,
             Action::dead_letter},
            {"PostgreSQL unreachable pauses", Failure::postgres_down, 0, Action::pause},
            {"Redis unreachable pauses", Failure::redis_down, 0, Action::pause},
            {"a handler's dependency unavailable pauses", Failure::dependency_down, 0,
             Action::pause},
            {"a handler that cannot prepare pauses", Failure::handler_unprepared, 0, Action::pause},
        };
        for (const auto& r : rows) {
            CAPTURE(r.row);
            CHECK(to_string(decide_record_failure(r.failure, r.attempts, 5)) ==
                  std::string(to_string(r.expected)));
        }
    }

    TEST_CASE("a failure around the records counts for each of them, bounded, never at once") {
        CHECK(decide_batch_failure(Failure::retryable, 1, 5) == Action::retry);
        CHECK(decide_batch_failure(Failure::aborted_transaction, 4, 5) == Action::retry);
        CHECK(decide_batch_failure(Failure::retryable, 5, 5) == Action::dead_letter);
        // A record swept up in a failure that was not its own is never judged permanent.
        CHECK(decide_batch_failure(Failure::permanent, 1, 5) == Action::retry);
        CHECK(decide_batch_failure(Failure::postgres_down, 99, 5) == Action::pause);
        CHECK(decide_batch_failure(Failure::handler_unprepared, 99, 5) == Action::pause);
    }

    TEST_CASE("a dead letter that cannot be recorded is retried, then stalls its partition") {
        CHECK(decide_dead_letter_failure(Failure::retryable, 1, 3) == Action::retry);
        CHECK(decide_dead_letter_failure(Failure::retryable, 2, 3) == Action::retry);
        CHECK(decide_dead_letter_failure(Failure::retryable, 3, 3) == Action::stall);
        CHECK(decide_dead_letter_failure(Failure::permanent, 3, 3) == Action::stall);
        CHECK(decide_dead_letter_failure(Failure::postgres_down, 9, 3) == Action::pause);
    }

    TEST_CASE("only failures of the records themselves count as attempts") {
        CHECK(counts_as_attempt(Failure::retryable));
        CHECK(counts_as_attempt(Failure::permanent));
        CHECK(counts_as_attempt(Failure::aborted_transaction));
        CHECK_FALSE(counts_as_attempt(Failure::contention));
        CHECK_FALSE(counts_as_attempt(Failure::postgres_down));
        CHECK_FALSE(counts_as_attempt(Failure::redis_down));
        CHECK_FALSE(counts_as_attempt(Failure::dependency_down));
        CHECK_FALSE(counts_as_attempt(Failure::handler_unprepared));
    }
}
