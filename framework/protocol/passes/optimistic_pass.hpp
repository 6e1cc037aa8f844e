#pragma once
// The optimistic pass (docs/design.md#transaction): records rarely fail, and a
// savepoint costs a round trip, so a transaction's records first run in one
// transaction without savepoints. The framework's SQL of every record at once
// (set-based, pg/record_start.hpp), then the handlers: a per-record handler
// per record, a batch handler once per run, in the order the sequences were
// decided in. Any failure rolls everything back; the caller forgets the
// verdicts and runs the records again: without the record a batch handler
// named, else carefully. A record whose sequence entity another transaction
// holds locked is left out, never waited for, and the others go on without it.
#include <pqxx/connection>

#include "protocol/passes/transaction_pass.hpp"

namespace exo {

// Records that are not pending are skipped. Records the set-based start left
// out because their entity is held are put back (with the records of their
// lanes behind them, Batch::hold_behind) and listed in `entity_held`, whether
// the pass committed or not: the caller NACKs them. Throws what pauses the
// worker.
PassResult run_optimistic_pass(const PassContext& ctx, pqxx::connection& connection, Batch& batch,
                               const TransactionRecords& records);

}  // namespace exo
