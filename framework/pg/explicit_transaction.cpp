#include "pg/explicit_transaction.hpp"

#include <pqxx/pqxx>

namespace exo {

ExplicitTransaction::ExplicitTransaction(pqxx::connection& connection) : tx_(connection) {
    tx_.exec("BEGIN");
    open_ = true;
}

ExplicitTransaction::~ExplicitTransaction() {
    if (!open_) return;
    try {
        tx_.exec("ROLLBACK");
    } catch (...) {
        // The connection is gone or unusable: the server rolls back by itself.
    }
}

void ExplicitTransaction::commit() {
    open_ = false;  // whatever happens now, ROLLBACK cannot undo it
    try {
        // PostgreSQL answers COMMIT of an aborted transaction with the command tag
        // ROLLBACK and no error, and libpqxx 6.4 does not expose command tags. A
        // statement in the same round trip does the asking: in an aborted
        // transaction it fails with 25P02 and the COMMIT behind it is skipped.
        tx_.exec("SELECT 1; COMMIT");
    } catch (const pqxx::sql_error& e) {
        if (e.sqlstate() != "25P02") throw;
        try {
            tx_.exec("ROLLBACK");
        } catch (...) {
            // The connection broke meanwhile: the server rolls back by itself.
        }
        throw CommitRefused(
            "the transaction was aborted before COMMIT (a statement failed and its error was "
            "swallowed); PostgreSQL rolled it back, nothing was applied");
    }
}

void ExplicitTransaction::rollback() {
    open_ = false;
    tx_.exec("ROLLBACK");
}

}  // namespace exo
