#pragma once
// PROTOTYPE, not exo's code: what PostgreSQL does when a batch's SQL is
// set-based instead of per record, to measure the gain of the proposal in the
// report before anyone changes the pipeline. Per batch, in one transaction:
//   1. one INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING RETURNING
//      of every dedup row (plus one SELECT of the existing rows if any were
//      duplicates),
//   2. one SELECT ... FOR UPDATE of the batch's sequence rows, the strict
//      decision made in memory (decide_sequence, in record order), one upsert
//      of each entity's final sequence (guarded: last_sequence < new); a stale
//      record's row is updated per record (rare),
//   3. the ledger effects: per record through LedgerHandler (set_framework),
//      or one statement for the whole batch (set_all: needs a batch handler API).
// Lookups by key are LATERAL (... LIMIT 1) subqueries so their cached generic
// plans stay primary-key probes (see prepare_set_based()).
// No savepoints: the proposal runs a batch without them and, only if a
// statement fails, rolls back and reruns that batch the per-record way. That
// fallback is not prototyped here (the workload has no failing records).
#include <pqxx/connection>
#include <vector>

#include "bench_world.hpp"
#include "ledger.hpp"
#include "postgres_bare.hpp"

namespace exo::bench {

void prepare_set_based(pqxx::connection_base& connection);

// Runs records `indexes` of `w` in order, `batch_size` per transaction. Throws
// pqxx exceptions, or std::runtime_error if a sequence or the guarded upsert
// disagrees with the in-memory decision (a concurrent writer: not expected here).
void run_set_based(pqxx::connection& connection, const Isolation& iso, const TopicWorkload& w,
                   const std::vector<std::size_t>& indexes, int batch_size, bool set_handler,
                   int thread, handlers::LedgerRecordHandler& handler, ShareOutcome& out);

}  // namespace exo::bench
