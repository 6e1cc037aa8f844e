#pragma once
// One worker's PostgreSQL session: opened when first needed (with the
// framework's statements and every handler's prepare()), dropped after a failure
// and reopened on next use. Counts failures in a row for the batch's backoff and
// logs an outage once when it starts and once when it ends.
//
// Thread-safety: none; the worker's thread only.
#include <functional>
#include <memory>
#include <string>

#include <spdlog/logger.h>
#include <pqxx/connection>

#include "config/config.hpp"
#include "protocol/session_access.hpp"

namespace exo {

class PostgresSession final : public PostgresAccess {
public:
    // `prepare` runs on every new connection after the framework's statements;
    // it throws HandlerPrepareError for a handler that cannot prepare. Every
    // connection is named `application_name` in pg_stat_activity (empty: not
    // named), unless the uri or PGAPPNAME named it already.
    PostgresSession(const PostgresConfig& config, std::function<void(pqxx::connection&)> prepare,
                    spdlog::logger& log, std::string application_name = {});

    // The open connection, connecting and preparing first if needed. Throws
    // pqxx::broken_connection when PostgreSQL is unreachable, HandlerPrepareError
    // (protocol/failure_matrix.hpp) when a handler cannot prepare.
    pqxx::connection& connection() override;
    // A failure left the session unusable (or its state unknown): drop it.
    void drop() override { connection_.reset(); }

    // The outage bookkeeping: failed() returns the failures in a row (this one
    // included); outage_logged() says whether the outage was logged yet (the
    // caller logs its first failure and marks it); answered() ends an outage,
    // logging that once.
    int failed() override;
    bool outage_logged() const { return down_logged_; }
    // Failures in a row; 0 once PostgreSQL answered again.
    int failures() const { return failures_; }
    void mark_outage_logged() { down_logged_ = true; }
    void answered();
    // A handler's prepare() failing: reported once until it succeeds.
    bool prepare_failing() const { return prepare_failing_; }
    void mark_prepare_failing() { prepare_failing_ = true; }

private:
    const PostgresConfig& config_;
    std::function<void(pqxx::connection&)> prepare_;
    spdlog::logger& log_;
    std::string application_name_;
    std::unique_ptr<pqxx::connection> connection_;
    int failures_ = 0;
    bool down_logged_ = false;
    bool prepare_failing_ = false;
};

}  // namespace exo
