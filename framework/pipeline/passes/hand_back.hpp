#pragma once
// The hand-back (docs/design.md sections 5.5 and 5.7): what a batch's fates
// mean for the offsets and the inbox. Finished records' offsets may be
// committed (and their outcomes are counted, now that they are durable);
// requeued and dead-letter records go back to the front of their lanes,
// which are held until the latest retry time among them; parked records wait
// aside. Pure but for the statistics: the worker applies it to its inbox.
#include <chrono>
#include <map>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "pipeline/batch.hpp"
#include "pipeline/worker_inbox.hpp"

namespace exo {

struct HandBack {
    std::vector<FinishedOffset> finished;
    std::vector<PendingRecord> requeue;  // in batch order
    std::map<Lane, WorkerInbox::Clock::time_point> hold_until;
    std::vector<WorkerInbox::Parked> parked;
    // Lanes whose stalled record reached an outcome.
    std::vector<Lane> unstalled;
};

// Moves every record's PendingRecord out of the batch.
HandBack hand_back(Batch& batch, PipelineStats& stats);

}  // namespace exo
