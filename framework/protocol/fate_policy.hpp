#pragma once
// What a failure means for the records it touches (docs/design.md#failure-matrix):
// the failure matrix's answers (protocol/failure_matrix.hpp) turned into fates,
// delays and counts. Every pass that meets a failure asks here, so a record
// pays the same for the same failure wherever it is met.
//
// Thread-safety: none; one thread of the worker (its lane's, BatchProtocol).
#include <chrono>
#include <random>
#include <string>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "core/backoff.hpp"
#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/failure_matrix.hpp"

namespace exo {

class FatePolicy {
public:
    FatePolicy(const PipelineConfig& pipeline, PipelineStats& stats, spdlog::logger& log);

    // The backoff after the n-th failure in a row, with jitter.
    std::chrono::milliseconds delay(int failures);

    // The record's own step failed: counted (if the failure counts), then
    // retried with the rest of its partition held behind it, NACKed, or
    // dead-lettered once out of attempts.
    void record_failed(Batch& batch, BatchRecord& record, Failure failure, const std::string& why);
    // Another transaction holds a row the record needs (a lock timeout, a
    // deadlock): NACKed, uncounted, its partition held behind it.
    void record_contended(Batch& batch, BatchRecord& record, const std::string& why);
    // Another worker holds the record's Redis claim (CONFLICT): NACKed for at
    // most the rest of that claim's lease. A record already held behind an
    // earlier NACK of its partition is left as it is, uncounted.
    void claim_conflict(Batch& batch, BatchRecord& record, std::chrono::milliseconds lease_left);
    // A strict-sequence gap that may still be filled: parked, not held (the
    // predecessor may be right behind it), for park_delay() (gap_parking.hpp):
    // doubling toward its binding's `gap_timeout`, never past it (`waited`:
    // since the gap's first sighting). Whether the partition may park one more
    // is the inbox's to decide (WorkerInbox::finish_batch).
    void park_for_gap(BatchRecord& record, const std::string& entity,
                      std::chrono::milliseconds gap_timeout, std::chrono::milliseconds waited);
    // A failure of the whole batch (`delay` chosen by the caller, who knows the
    // dependency's backoff): records a committed transaction or Redis settled
    // keep their fate; the others are put back, counted when `failure` counts.
    void batch_failed(Batch& batch, Failure failure, std::chrono::milliseconds delay,
                      const std::string& why);

private:
    PipelineStats& stats_;
    spdlog::logger& log_;
    Backoff backoff_;
    std::chrono::milliseconds park_initial_;  // retry_backoff_initial_ms
    std::mt19937_64 rng_;
};

}  // namespace exo
