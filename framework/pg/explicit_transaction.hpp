#pragma once
// A database transaction whose BEGIN / COMMIT / ROLLBACK exo sends itself, on a
// pqxx::nontransaction. Why not pqxx::work: libpqxx 6.4's dbtransaction aborts
// the whole transaction when a statement run with exec() fails (exec_prepared
// does not), after which ROLLBACK TO SAVEPOINT is impossible and one handler's
// constraint violation would sink its transaction on every retry. Here a failed
// statement leaves the server-side transaction for the caller to roll back to
// a savepoint.
//
// Lifecycle: BEGIN in the constructor; commit() or rollback() once; the
// destructor rolls back what was not committed (best effort, never throws).
// Whatever fails, the session is never left inside the transaction: a later
// BEGIN there would fail with 25P02 (an aborted transaction: every batch on
// the slot would count an attempt and be dead-lettered) or, worse, merge into
// it (an open one). What ROLLBACK cannot end is ended by closing the session
// (connection::disconnect(); the server rolls back), which its owner reopens
// on next use (runtime/sessions/postgres_session.hpp reconnects a closed connection).
// Errors: every method throws pqxx exceptions (classify with classify_pg_error).
// A COMMIT whose answer is lost throws pqxx::broken_connection: the outcome is
// then unknown and the caller must retry through the dedup rows; nothing here
// sends COMMIT again. COMMIT of a transaction that a failed statement aborted
// (someone swallowed its error; PostgreSQL would answer ROLLBACK without an
// error) throws CommitRefused: nothing was applied, and nothing may be
// reported as done. Any other failure of commit() (a cancel, 57014; out of
// memory, 53200; a deferred constraint) is rethrown after a ROLLBACK: the
// server skipped or refused COMMIT, so nothing was applied. BEGIN on a
// session left inside an aborted transaction (a defect elsewhere) closes the
// session and throws pqxx::broken_connection, as does a ROLLBACK that fails:
// the session is gone, and the records are not at fault.
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <stdexcept>

namespace exo {

class Failpoints;

class CommitRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ExplicitTransaction {
public:
    explicit ExplicitTransaction(pqxx::connection& connection);
    ExplicitTransaction(const ExplicitTransaction&) = delete;
    ExplicitTransaction& operator=(const ExplicitTransaction&) = delete;
    ~ExplicitTransaction();

    // For the framework's statements and the handler's.
    pqxx::transaction_base& statements() { return tx_; }
    // `failpoints` (tests; nullptr in production): pg_commit_probe=cancel makes
    // the statement sent with COMMIT fail as a cancel does (core/failpoints.hpp).
    void commit(Failpoints* failpoints = nullptr);
    void rollback();

private:
    // ROLLBACK, or close the session if even that fails. Never throws.
    void end_after_failure() noexcept;

    pqxx::connection& connection_;
    pqxx::nontransaction tx_;
    bool open_ = false;
};

}  // namespace exo
