#pragma once
// `exo sequence advance` (docs/operations.md, "Recovering a strict entity"):
// the one way exo moves an entity's sequence outside the pipeline. A strict
// entity whose next record is a poison that will never apply holds every later
// record as a gap until it is dead-lettered; moving the entity's last sequence
// to the poison's lets the later ones apply (replayed with `exo dlq replay
// --entity`). Each move is recorded in exo_sequence_advances (sql/0009).
//
// Exactly once is untouched: sequences only decide which records apply, and
// the dedup rows still fence every key. An advance is only ever forward, so no
// applied sequence can apply again. Runs one short transaction on
// `connection` (not inside another). Throws UsageError for a move backwards
// (nothing changed); ContentionError-free: a lock the daemon holds on the
// entity fails with the session's lock timeout (pqxx), to be run again.
//
// `exo sequence rewind` (request.backward; docs/operations.md, "Recovering a
// sequence that jumped"): the one move back, for an entity a record with an
// absurd sequence (INT64_MAX in latest mode) made STALE to everything after
// it. Only an existing sequence, only down, audited in exo_sequence_advances
// with from > to. Sequences between `to` and the old value may then apply,
// but only under keys without a dedup row: an applied key stays a duplicate.
// The entity's row is locked NOWAIT: held by another transaction (a record of
// the entity being applied), the rewind is refused, std::runtime_error,
// nothing changed. UsageError: no sequence, a target above it (nothing changed).
#include <pqxx/connection>

#include "ops/ops_records.hpp"

namespace exo {

SequenceAdvanceResult advance_sequence(pqxx::connection& connection,
                                       const SequenceAdvanceRequest& request);

}  // namespace exo
