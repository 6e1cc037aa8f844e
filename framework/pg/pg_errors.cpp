#include "pg/pg_errors.hpp"

#include <pqxx/pqxx>

namespace exo {

PgFailure classify_pg_error(const std::exception& e) {
    if (dynamic_cast<const pqxx::in_doubt_error*>(&e)) return PgFailure::outcome_unknown;
    if (dynamic_cast<const pqxx::broken_connection*>(&e)) return PgFailure::connection_lost;
    // A deadlock is two transactions wanting each other's rows: like a lock
    // timeout, nobody's record is at fault, and counting it would dead-letter
    // good records under contention. Checked before its base class.
    if (dynamic_cast<const pqxx::deadlock_detected*>(&e)) return PgFailure::contention;
    if (dynamic_cast<const pqxx::transaction_rollback*>(&e)) return PgFailure::retryable;
    if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
        const std::string& state = sql->sqlstate();
        // Class 08: connection exception; 57P01-03: admin shutdown, crash, cannot connect now.
        if (state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0)
            return PgFailure::connection_lost;
        // 55P03 lock_not_available: lock_timeout (or NOWAIT) on any row, exo's
        // own (dedup rows, exo_sequences, exo_outbox_keys of the outbox writer)
        // or a handler's; 40P01 deadlock_detected, should a subclass be missing.
        if (state == "55P03" || state == "40P01") return PgFailure::contention;
        // Class 22: data exception: the record's data cannot be stored, ever.
        if (state.rfind("22", 0) == 0) return PgFailure::permanent;
        return PgFailure::retryable;
    }
    return PgFailure::retryable;
}

const char* to_string(PgFailure f) {
    switch (f) {
        case PgFailure::connection_lost:
            return "connection lost";
        case PgFailure::outcome_unknown:
            return "outcome unknown";
        case PgFailure::contention:
            return "contention";
        case PgFailure::retryable:
            return "retryable";
        case PgFailure::permanent:
            return "permanent";
    }
    return "?";
}

bool is_aborted_transaction(const std::exception& e) {
    const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
    return sql != nullptr && sql->sqlstate() == "25P02";
}

std::string swallowed_error_reason(const std::string& handler) {
    return "handler '" + handler +
           "' caught a database error and went on: PostgreSQL aborted the transaction, so "
           "nothing it wrote can commit. Let the error propagate, or wrap the statement that may "
           "fail in a SAVEPOINT of its own (ROLLBACK TO SAVEPOINT on failure)";
}

}  // namespace exo
