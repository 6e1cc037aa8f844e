#pragma once
// The transaction step (docs/design.md section 5.3): the batch's pending
// records in PostgreSQL transactions, in partition order. The transaction's
// records run optimistically first; a record a batch handler names is taken
// out and the rest run optimistically again (at most kMaxExclusions times);
// any other failure runs them carefully, a savepoint per record; a COMMIT that
// fails without naming a record runs each once more in a transaction of its
// own, so the one that fails COMMIT pays alone. In either pass a record whose
// sequence entity another transaction holds locked is NACKed at once, with the
// records of its lane behind it, and the others go on in the same transaction.
//
// Thread-safety: none; the worker's thread only.
#include "pipeline/batch.hpp"
#include "pipeline/passes/transaction_pass.hpp"
#include "pipeline/postgres_session.hpp"

namespace exo {

// How many records batch handlers may name in one transaction's records before
// they run carefully.
inline constexpr int kMaxExclusions = 8;

// Records whose dead-letter verdict an earlier try took (only their dead-letter
// step failed) go straight to the dead-letter step, and the pending records of
// their lane behind them wait for the next batch. Done before anything of the
// batch runs: none of them runs handler code in this batch.
void take_carried_dead_letters(Batch& batch);

class TransactionStep {
public:
    TransactionStep(PassContext ctx, PostgresSession& postgres) : ctx_(ctx), postgres_(postgres) {}

    // Leaves every pending record of the batch with a fate; a record whose
    // dead-letter verdict an earlier try took goes straight to the dead-letter
    // step. Throws what pauses the worker, and what fails the whole batch.
    void run(Batch& batch);

private:
    void run_records(Batch& batch, const TransactionRecords& records);

    PassContext ctx_;
    PostgresSession& postgres_;
};

}  // namespace exo
