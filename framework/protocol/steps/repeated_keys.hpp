#pragma once
// The settling of repeated keys (docs/design.md#key): a later copy of a
// key in one batch (fate::AwaitsFirst, from the key step) ends as its first
// copy did, once the batch's transactions and dead letters are done. Pure: no
// I/O.
#include "protocol/batch.hpp"

namespace exo {

// A later copy whose first copy settled its key (BatchRecord::settled_key:
// committed, or answered by Redis or a dedup row) is finished as its duplicate
// (Outcome::duplicate_in_batch) with the first's stored outcome and result, as
// the next batch would have found them, unless its fingerprint differs from the
// one the key's dedup row holds (BatchRecord::stored_fingerprint of the first)
// under on_key_reuse dead_letter or log: such a copy is requeued with no delay,
// and its next claim meets the key's dedup row and its binding's policy there
// (passes/key_reuse.hpp), counted once. Any other later copy is requeued with
// no delay, as if it had waited for the next batch: its first copy was
// requeued, NACKed, parked, failed, or dead-lettered without a dedup row, so
// nothing is known of the key yet, and its offset must not pass unapplied work.
// Run after every step that can finish a record (settle): a record is finished
// only once its outcome is durable. Afterwards no record of the batch awaits
// its first copy (hand_back's precondition).
void settle_repeated_keys(Batch& batch);

}  // namespace exo
