#pragma once
// A batch: the records a worker took from its inbox at once (up to
// pipeline.batch_size, in partition order), owned while the steps of
// docs/design.md#per-record run over them. Each step leaves every record it
// touches with a fate (batch_record.hpp); the hand-back gives them back.
//
// The records of one PostgreSQL transaction are a TransactionRecords, the
// consecutive records of one binding a batch handler gets in one call a Run:
// both point into their batch, which outlives them.
//
// Thread-safety: none; the worker's thread only.
#include <deque>
#include <vector>

#include "protocol/batch_record.hpp"
#include "redis/claim_store.hpp"
#include "scheduling/pending_record.hpp"

namespace exo {

using TransactionRecords = std::vector<BatchRecord*>;  // in the order they run
using Run = std::vector<BatchRecord*>;                 // consecutive, one binding

class Batch {
public:
    explicit Batch(std::vector<PendingRecord> taken);
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    std::size_t size() const { return records_.size(); }
    auto begin() { return records_.begin(); }
    auto end() { return records_.end(); }
    auto begin() const { return records_.begin(); }
    auto end() const { return records_.end(); }

    // Order is per lane (a partition, or one ordering key of it:
    // docs/design.md#ordering-and-concurrency): the pending records behind `record` in its lane
    // wait for the next batch, where they come after it again. Other lanes are not held.
    void hold_behind(const BatchRecord& record);
    // The Redis claims the batch holds now (for the lease keeper).
    std::vector<TokenRequest> open_claims() const;

private:
    // A deque never moves its elements: each record's payload points into the
    // record itself, and TransactionRecords point at them.
    std::deque<BatchRecord> records_;
};

}  // namespace exo
