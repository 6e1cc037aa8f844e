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
// Errors: every method throws pqxx exceptions (classify with classify_pg_error).
// A COMMIT whose answer is lost throws pqxx::broken_connection: the outcome is
// then unknown and the caller must retry through the dedup rows. COMMIT of a
// transaction that a failed statement aborted (someone swallowed its error;
// PostgreSQL would answer ROLLBACK without an error) throws CommitRefused:
// nothing was applied, and nothing may be reported as done.
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <stdexcept>

namespace exo {

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
    void commit();
    void rollback();

private:
    pqxx::nontransaction tx_;
    bool open_ = false;
};

}  // namespace exo
