#pragma once
// The transaction's retry ladder (docs/design.md#transaction-retry-ladder), as
// data: how the records of one transaction are tried again after an attempt
// that did not commit. Pure: the previous attempt's result in, the next
// attempt out; the executor (attempt_executor.hpp) runs attempts, TransactionStep
// loops over the two. Table-tested in tests/retry_ladder_test.cpp.
//
// The rungs, in the order a failure walks down them:
//   optimistic  one transaction, no savepoints, the framework's SQL set-based;
//               again without the record a batch handler named
//               (BatchRecordFailed), at most kMaxExclusions times, and again
//               without the records whose before_transaction() threw (those are
//               known before BEGIN and cost no exclusion);
//   careful     one transaction, a savepoint per record: a record's failure
//               rolls back alone; any other failure of an optimistic attempt
//               comes here;
//   each_alone  the careful attempt's COMMIT failed naming no record: each
//               record it decided runs once more in a transaction of its own
//               (a ladder of its own, which starts careful), so the one that
//               fails COMMIT pays alone;
//   done        nothing is left to run.
// A record alone whose COMMIT fails is that record's retryable failure.
// Records whose sequence entity another transaction held are NACKed after any
// attempt that met them, whichever way it ended.
#include <cstddef>

namespace exo {

// How many records batch handlers may name in one transaction's records before
// they run carefully.
inline constexpr int kMaxExclusions = 8;

enum class Rung { optimistic, careful, each_alone, done };

// The previous attempt's result, as far as the ladder needs it.
struct Attempted {
    Rung rung = Rung::optimistic;  // optimistic or careful: the ones that run a transaction
    bool committed = false;        // careful and not committed: its COMMIT failed
    bool named = false;            // optimistic: a batch handler named the record it failed on
    bool outside_failed = false;   // optimistic: records whose before_transaction() threw
    bool entity_held = false;      // records another transaction's entity lock kept out
    int exclusions = 0;            // named records taken out before this attempt
    std::size_t records = 0;       // the transaction's records
};

// What the step does after an attempt, in this order: forget what a rolled-back
// attempt decided, record the failures the plan names, then run `next`.
struct Plan {
    bool forget = false;        // the records the attempt ran go back to pending
    bool nack_held = false;     // NACK the entity-held records (uncounted)
    bool fail_outside = false;  // fail the records whose before_transaction() threw
    bool fail_named = false;    // fail the record a batch handler named: one exclusion
    bool fail_commit = false;   // the one record failed COMMIT: its retryable failure
    Rung next = Rung::done;
    int exclusions = 0;  // named records taken out, this plan's included

    bool operator==(const Plan&) const = default;
};

// The first attempt over `records` records: optimistic, but careful at once for
// a record alone after a failed COMMIT (`solo`).
Plan first_attempt(std::size_t records, bool solo);

// The attempt after `attempted`.
Plan next_attempt(const Attempted& attempted);

}  // namespace exo
