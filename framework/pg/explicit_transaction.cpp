#include "pg/explicit_transaction.hpp"

#include <pqxx/pqxx>

#include "core/failpoints.hpp"

namespace exo {
namespace {

// PostgreSQL answers COMMIT of an aborted transaction with the command tag
// ROLLBACK and no error, and libpqxx 6.4 does not expose command tags. A
// statement in the same round trip does the asking: in an aborted transaction
// it fails with 25P02 and the COMMIT behind it is skipped.
constexpr const char* kProbedCommit = "SELECT 1; COMMIT";
// The failpoint pg_commit_probe: the asking statement fails as a cancel does
// (57014), on the server, so the COMMIT behind it is skipped just the same.
constexpr const char* kCancelledCommit =
    "DO $$BEGIN RAISE query_canceled USING MESSAGE = "
    "'canceling statement due to failpoint pg_commit_probe'; END$$; COMMIT";

bool is_sqlstate(const std::exception& e, const char* state) {
    const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
    return sql != nullptr && sql->sqlstate() == state;
}

}  // namespace

ExplicitTransaction::ExplicitTransaction(pqxx::connection& connection)
    : connection_(connection), tx_(connection) {
    try {
        tx_.exec("BEGIN");
    } catch (const pqxx::sql_error& e) {
        if (e.sqlstate() != "25P02") throw;
        // BEGIN inside an aborted transaction: whoever used the session before
        // left it there (a defect; every path of this class ends its own). What
        // else it left (SET LOCAL, locks) is unknown: the session is not reused.
        connection_.disconnect();
        throw pqxx::broken_connection(
            "the PostgreSQL session was still inside an aborted transaction when BEGIN came; "
            "it was closed (the server rolls back) and a new one is opened");
    }
    open_ = true;
}

ExplicitTransaction::~ExplicitTransaction() {
    if (open_) end_after_failure();
}

void ExplicitTransaction::commit(Failpoints* failpoints) {
    open_ = false;
    const bool cancel = failpoints != nullptr && failpoints->cancels("pg_commit_probe");
    try {
        tx_.exec(cancel ? kCancelledCommit : kProbedCommit);
    } catch (const pqxx::broken_connection&) {
        // The outcome is unknown (COMMIT may have been applied): nothing can be
        // asked or undone on this session, and COMMIT is never sent again.
        throw;
    } catch (const std::exception& e) {
        // The probe failed (an aborted transaction, a cancel, out of memory) and
        // the COMMIT behind it was skipped, or COMMIT itself failed and the
        // server rolled back. Either way the session may still be inside the
        // transaction, where every later BEGIN fails with 25P02: end it. If
        // COMMIT did apply after all, ROLLBACK cannot undo it (it only warns).
        end_after_failure();
        if (!is_sqlstate(e, "25P02")) throw;
        throw CommitRefused(
            "the transaction was aborted before COMMIT (a statement failed and its error was "
            "swallowed); PostgreSQL rolled it back, nothing was applied");
    }
}

void ExplicitTransaction::rollback() {
    open_ = false;
    try {
        tx_.exec("ROLLBACK");
    } catch (const pqxx::broken_connection&) {
        throw;  // the server rolls back by itself
    } catch (const std::exception& e) {
        // Still inside the transaction: closing the session is the sure way out.
        connection_.disconnect();
        throw pqxx::broken_connection(std::string("ROLLBACK failed (") + e.what() +
                                      "); the PostgreSQL session was closed to end its "
                                      "transaction, and a new one is opened");
    }
}

void ExplicitTransaction::end_after_failure() noexcept {
    try {
        tx_.exec("ROLLBACK");
    } catch (...) {
        // Broken already, or even ROLLBACK failed: a closed session's
        // transaction is rolled back by the server, and its owner reconnects.
        connection_.disconnect();
    }
}

}  // namespace exo
