#pragma once
// Renews the Redis claims of the batches the process is running, every
// lease/3, so a live worker with a slow handler is never taken over
// (docs/design.md#redis-claim-record-and-scripts, `extend`). One LeaseRenewer per process: its own
// thread and its own Redis connection (a batch's thread is busy inside the
// handler exactly when renewal matters) renew the claims of every batch runner
// that is due, whoever holds them, in one pipelined round trip. Each batch runner
// (a worker's slot) has a LeaseKeeper: the claims its batch holds.
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
// A keeper's claims are renewed once they have been held unchanged for lease/3
// (a batch that finishes sooner never costs a renewal); keepers due within
// half a period of each other are renewed together.
//
// Thread-safety: every method may be called from any thread (the worker's, the
// poll thread's for abandon()); the renewal runs on the renewer's thread.
// Lifecycle: the renewer's thread starts in its constructor and is stopped and
// joined by its destructor (after a renewal in flight has been answered and
// judged); it outlives its keepers. A keeper gone while its claims' renewal is
// in flight is not judged.
#include <spdlog/logger.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "protocol/session_access.hpp"
#include "redis/claim_store.hpp"

namespace exo {

class LeaseKeeper;

class LeaseRenewer {
public:
    // One renewal round trip: the status of each owner's claims, in order.
    // Throws RedisError. Called on the renewer's thread only.
    using Extend =
        std::function<std::vector<std::vector<FinishStatus>>(const std::vector<OwnedClaims>&)>;

    // Renews with extend.lua on a Redis connection of its own (opened on first
    // use, and again after it closed).
    // `lease`: claim.lease_ms, each renewal's new lease (renewed every third of it);
    // `group`: kafka.group_id, the claims' namespace. `redis` outlives the renewer.
    LeaseRenewer(const RedisConfig& redis, std::chrono::milliseconds lease, std::string group,
                 PipelineStats& stats, std::shared_ptr<spdlog::logger> log);
    // Renews with `extend` (tests: a Redis that answers on cue).
    LeaseRenewer(std::chrono::milliseconds lease, PipelineStats& stats,
                 std::shared_ptr<spdlog::logger> log, Extend extend);
    LeaseRenewer(const LeaseRenewer&) = delete;
    LeaseRenewer& operator=(const LeaseRenewer&) = delete;
    ~LeaseRenewer();

private:
    friend class LeaseKeeper;
    using Clock = std::chrono::steady_clock;
    struct Held {
        std::string owner;
        std::vector<TokenRequest> claims;
        bool abandoned = false;  // until start_batch()
        Clock::time_point due;   // of the claims' next renewal
    };

    void run(std::stop_token stop);
    // Renews `due` (keeper ids and their claims) and judges the answers.
    void renew(const std::vector<std::uint64_t>& ids, const std::vector<OwnedClaims>& due);
    // Whether keeper `id` holds `claim` (key and token) now; mutex_ held.
    bool holds(std::uint64_t id, const TokenRequest& claim) const;

    PipelineStats& stats_;
    std::shared_ptr<spdlog::logger> log_;
    Extend extend_;  // renewer thread only
    const std::chrono::milliseconds period_;

    std::mutex mutex_;
    std::condition_variable_any changed_;
    std::map<std::uint64_t, Held> keepers_;  // guarded by mutex_; by keeper id
    std::uint64_t next_id_ = 1;              // guarded by mutex_
    std::uint64_t version_ = 0;              // guarded by mutex_; bumped by every change

    std::jthread thread_;  // last: joined before the members it uses go
};

// The claims of one batch runner's batch, renewed by the process's renewer
// under the runner's owner id (a claim is re-entrant for its owner: runners
// never share one).
class LeaseKeeper final : public ClaimLeases {
public:
    // `renewer` outlives the keeper.
    LeaseKeeper(LeaseRenewer& renewer, std::string owner);
    LeaseKeeper(const LeaseKeeper&) = delete;
    LeaseKeeper& operator=(const LeaseKeeper&) = delete;
    ~LeaseKeeper();

    // A new batch begins: hold() keeps claims alive again after an abandon().
    void start_batch();
    // The claims to keep alive from now on (replaces any earlier set); ignored
    // once the batch's claims were abandoned. Call it without a claim before
    // completing or releasing that claim in Redis (see above).
    void hold(std::vector<TokenRequest> claims) override;
    void clear() { hold({}); }
    // Stops renewing the batch's claims, for the rest of the batch.
    void abandon();
    // The claims it renews now (for tests).
    std::vector<TokenRequest> held();

private:
    LeaseRenewer& renewer_;
    const std::uint64_t id_;
};

}  // namespace exo
