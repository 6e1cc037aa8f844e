#pragma once
// The optimistic pass (docs/design.md section 5.3): records rarely fail, and a
// savepoint costs a round trip, so a transaction's records first run in one
// transaction without savepoints. The framework's SQL of every record at once
// (set-based, pg/record_start.hpp), then the handlers: a per-record handler
// per record, a batch handler once per run, in the order the sequences were
// decided in. Any failure rolls everything back; the caller forgets the
// verdicts and runs the records again: without the record a batch handler
// named, else carefully.
#include <pqxx/connection>

#include "pipeline/passes/transaction_pass.hpp"

namespace exo {

// Records that are not pending are skipped. Throws what pauses the worker.
PassResult run_optimistic_pass(const PassContext& ctx, pqxx::connection& connection,
                               const TransactionRecords& records);

}  // namespace exo
