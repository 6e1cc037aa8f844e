#include "pg/batch_transaction.hpp"

#include <pqxx/pqxx>

namespace exo {

BatchTransaction::BatchTransaction(pqxx::connection& connection) : tx_(connection) {
    tx_.exec("BEGIN");
    open_ = true;
}

BatchTransaction::~BatchTransaction() {
    if (!open_) return;
    try {
        tx_.exec("ROLLBACK");
    } catch (...) {
        // The connection is gone or unusable: the server rolls back by itself.
    }
}

void BatchTransaction::commit() {
    open_ = false;  // whatever happens now, ROLLBACK cannot undo it
    tx_.exec("COMMIT");
}

void BatchTransaction::rollback() {
    open_ = false;
    tx_.exec("ROLLBACK");
}

}  // namespace exo
