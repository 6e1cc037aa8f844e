#pragma once
// Every libpqxx failure is classified here, in one place (libpqxx's
// transactor.hxx rule): what the pipeline does next depends only on the class.
#include <exception>
#include <string>

namespace exo {

enum class PgFailure {
    // The connection is gone: the whole transaction is lost. Reconnect with
    // backoff and retry the batch; the dedup rows make the retry safe. Also
    // what ExplicitTransaction throws when it closed a session it could not
    // bring out of a transaction (pg/explicit_transaction.hpp).
    connection_lost,
    // COMMIT was sent but its answer never came (pqxx::in_doubt_error): the
    // batch may or may not be applied. Retry it: the dedup rows tell which.
    outcome_unknown,
    // lock_timeout ran out (55P03), or a deadlock was broken (40P01): another
    // transaction, live or frozen, holds a row this record needs (its dedup row,
    // its entity's sequence, an exo_outbox_keys row of its emits, a handler's
    // row). Nothing is wrong with the record: roll it back and NACK it like a
    // Redis CONFLICT, without counting an attempt.
    contention,
    // Serialization failure or another error that may pass: roll the record
    // back and retry it with backoff, up to max_attempts.
    retryable,
    // The data can never be applied (invalid input syntax, out of range): dead-letter.
    permanent,
};

PgFailure classify_pg_error(const std::exception& e);
const char* to_string(PgFailure f);

// True for SQLSTATE 25P02 (in_failed_sql_transaction): a statement failed
// earlier in this transaction and its error was swallowed; every statement until
// the rollback fails with this. The fault is the earlier statement's.
bool is_aborted_transaction(const std::exception& e);

// The reason a record fails with when its handler swallowed a database error
// (is_aborted_transaction): what happened and how to fix the handler. One text
// for the daemon and the test kit, so a test reads what an operator reads.
std::string swallowed_error_reason(const std::string& handler);

}  // namespace exo
