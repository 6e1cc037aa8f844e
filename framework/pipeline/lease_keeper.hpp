#pragma once
// Renews the Redis claims of the batch a worker is running, every lease/3, so a
// live worker with a slow handler is never taken over (docs/design.md section 3,
// `extend`). Runs on its own thread with its own Redis connection: the worker's
// thread is busy inside the handler exactly when renewal matters.
//
// A renewal that answers LOST means the claim was taken over anyway (the worker
// was paused past its lease, or Redis lost the key): nothing to do here, the
// dedup row decides which transaction wins. It is logged and counted
// (leases_lost), but only for a claim still held, under the same token, when
// the answer is read. A renewal runs without the lock, so the worker may finish
// a claim meanwhile; the renewal then reaches Redis after the complete or
// release and answers LOST for a claim finished on purpose. That is why the
// worker lets go of a claim (a hold() without it) before it completes or
// releases it in Redis: a LOST read while the claim is still held then came
// from a renewal that reached Redis before the worker's own finish. A key let
// go and held again under a new token (its next try) is another claim: a LOST
// for the old token is not counted against it.
//
// Abandoning: when a revoke's drain deadline passes, the poll thread abandons the
// claims of the batch in hand (abandon()), so the partition's new owner can take
// them over after one lease. That lasts until the worker starts its next batch
// (start_batch()): a hold() of the same batch in between, e.g. right after its
// claim step, is ignored, or it would quietly undo the abandoning.
//
// Thread-safety: every method may be called from any thread (the worker's, the
// poll thread's for abandon()); the renewal runs on the keeper's thread.
// Lifecycle: the thread starts in the constructor and is stopped and joined by
// the destructor (after a renewal in flight has been answered and judged).
#include <spdlog/logger.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "redis/claim_store.hpp"

namespace exo {

class LeaseKeeper {
public:
    // One renewal round trip: the status of each claim, in order. Throws
    // RedisError. Called on the keeper's thread only.
    using Extend = std::function<std::vector<FinishStatus>(const std::vector<TokenRequest>&)>;

    // Renews with extend.lua for `owner`, on a Redis connection of its own
    // (opened on first use, and again after it closed).
    LeaseKeeper(const Config& config, std::string owner, PipelineStats& stats,
                std::shared_ptr<spdlog::logger> log);
    // Renews with `extend` (tests: a Redis that answers on cue).
    LeaseKeeper(const Config& config, PipelineStats& stats, std::shared_ptr<spdlog::logger> log,
                Extend extend);
    LeaseKeeper(const LeaseKeeper&) = delete;
    LeaseKeeper& operator=(const LeaseKeeper&) = delete;
    ~LeaseKeeper();

    // A new batch begins: hold() keeps claims alive again after an abandon().
    void start_batch();
    // The claims to keep alive from now on (replaces any earlier set); ignored
    // once the batch's claims were abandoned. Call it without a claim before
    // completing or releasing that claim in Redis (see above).
    void hold(std::vector<TokenRequest> claims);
    void clear() { hold({}); }
    // Stops renewing the batch's claims, for the rest of the batch.
    void abandon();
    // The claims it renews now (for tests).
    std::vector<TokenRequest> held();

private:
    void run(std::stop_token stop);
    void renew(const std::vector<TokenRequest>& claims);
    // Whether `claim` (key and token) is held now; mutex_ held.
    bool holds(const TokenRequest& claim) const;

    const Config& config_;
    PipelineStats& stats_;
    std::shared_ptr<spdlog::logger> log_;
    Extend extend_;  // keeper thread only

    std::mutex mutex_;
    std::condition_variable_any changed_;
    std::vector<TokenRequest> claims_;  // guarded by mutex_
    std::uint64_t generation_ = 0;      // guarded by mutex_; bumped by hold()
    bool abandoned_ = false;            // guarded by mutex_; until start_batch()

    std::jthread thread_;  // last: joined before the members it uses go
};

}  // namespace exo
