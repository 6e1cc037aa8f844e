#pragma once
// The careful pass (docs/design.md#transaction): a transaction's records again,
// each in its own savepoint, so a failing record rolls back alone and pays
// alone (the fate policy decides what), and the others commit. A handler that
// swallowed a database error is blamed where it shows: at the next savepoint,
// or at the RELEASE SAVEPOINT after the last record. A batch handler's records
// run one at a time through its handle(). A record whose sequence entity
// another transaction holds locked is NACKed before any record runs, with the
// records of its lane behind it; the others are not kept waiting for it.
#include <pqxx/connection>

#include "protocol/passes/transaction_pass.hpp"

namespace exo {

// Records that are not pending are skipped. Not committed only when COMMIT
// failed for a reason that names no record. Throws what pauses the worker,
// and a failure of a step around the records (a SAVEPOINT, a ROLLBACK TO),
// which fails the whole batch.
PassResult run_careful_pass(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                            const TransactionRecords& records);

}  // namespace exo
