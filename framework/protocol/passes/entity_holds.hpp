#pragma once
// Records whose sequence entity another transaction holds locked (
// docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based). Both passes lock the
// entities of a transaction's records FOR UPDATE SKIP LOCKED (pg/record_start.hpp) and put such
// records back at once, instead of waiting lock_timeout for the lock and then failing the whole
// transaction; the rest of it goes on. Their lanes keep their order: the
// records behind a held one in its lane go back with it.
//
// Pure: fates only, no I/O, nothing counted. Thread-safety: none; the
// worker's thread only, as the batch.
#include <string>
#include <vector>

#include "pg/framework_statements.hpp"
#include "protocol/batch.hpp"
#include "protocol/passes/transaction_pass.hpp"

namespace exo {

struct HeldRecord {
    BatchRecord* record;
    std::string why;  // entity_held_reason()
};

// Why a record whose sequence entity `step` names is put back.
std::string entity_held_reason(const SequenceStep& step);

// Puts back each record of `held` (in batch order) that is still pending, and
// the pending records of its lane behind it (Batch::hold_behind): requeued
// without delay, uncounted. Returns the records put back for their own entity,
// each a Failure::contention for FatePolicy::record_failed to NACK (counted
// once, with the NACK backoff). A held record already behind one of them is
// not among them, as a record held behind a Redis CONFLICT is not NACKed
// itself. Never throws.
std::vector<NamedFailure> put_back_held(Batch& batch, std::vector<HeldRecord> held);

}  // namespace exo
