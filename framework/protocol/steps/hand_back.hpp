#pragma once
// The hand-back (docs/design.md#offsets and docs/design.md#hand-back): what a batch's fates
// mean for the offsets and the inbox. Finished records' offsets may be
// committed (and their outcomes are counted, now that they are durable);
// requeued records (a dead letter its step could not record among them) go
// back to the front of their lanes, which are held until the latest retry
// time among them; parked records wait aside. Pure but for the statistics: the worker applies it to
// its inbox.
#include <chrono>
#include <map>
#include <vector>

#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "scheduling/worker_inbox.hpp"

namespace exo {

struct HandBack {
    std::vector<FinishedOffset> finished;
    std::vector<PendingRecord> requeue;  // in batch order
    std::map<Lane, WorkerInbox::Clock::time_point> hold_until;
    std::vector<WorkerInbox::Parked> parked;
    // Lanes whose stalled record reached an outcome.
    std::vector<Lane> unstalled;
};

// Moves every record's PendingRecord out of the batch. Precondition: the batch
// is settled (BatchProtocol::settle), so every record is finished, requeued or
// parked: each step leaves the records it touches with a fate,
// DeadLetterPublisher::publish finishes or requeues every dead letter, and
// settle_repeated_keys ends every later copy of a key. Throws std::logic_error
// if a record is still pending, a dead letter or awaiting its first copy (a
// bug in a step, not a record's failure), before it moves anything: the batch
// is then left as it was.
HandBack hand_back(Batch& batch, PipelineStats& stats);

}  // namespace exo
