#pragma once
// Renews the Redis claims of the batch a worker is running, every lease/3, so a
// live worker with a slow handler is never taken over (docs/design.md section 3,
// `extend`). Runs on its own thread with its own Redis connection: the worker's
// thread is busy inside the handler exactly when renewal matters.
//
// A renewal that answers LOST means the claim was taken over anyway (the worker
// was paused past its lease, or Redis lost the key): nothing to do here, the
// dedup row decides which transaction wins. It is logged and counted.
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
// the destructor.
#include <spdlog/logger.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "redis/claim_store.hpp"

namespace exo {

class LeaseKeeper {
public:
    LeaseKeeper(const Config& config, std::string owner, PipelineStats& stats,
                std::shared_ptr<spdlog::logger> log);
    LeaseKeeper(const LeaseKeeper&) = delete;
    LeaseKeeper& operator=(const LeaseKeeper&) = delete;
    ~LeaseKeeper();

    // A new batch begins: hold() keeps claims alive again after an abandon().
    void start_batch();
    // The claims to keep alive from now on (replaces any earlier set); ignored
    // once the batch's claims were abandoned.
    void hold(std::vector<TokenRequest> claims);
    void clear() { hold({}); }
    // Stops renewing the batch's claims, for the rest of the batch.
    void abandon();
    // The claims it renews now (for tests).
    std::vector<TokenRequest> held();

private:
    void run(std::stop_token stop);
    void renew(const std::vector<TokenRequest>& claims);

    const Config& config_;
    std::string owner_;
    PipelineStats& stats_;
    std::shared_ptr<spdlog::logger> log_;

    std::mutex mutex_;
    std::condition_variable_any changed_;
    std::vector<TokenRequest> claims_;  // guarded by mutex_
    std::uint64_t generation_ = 0;      // guarded by mutex_; bumped by hold()
    bool abandoned_ = false;            // guarded by mutex_; until start_batch()

    std::optional<RedisConnection> redis_;  // keeper thread only
    std::optional<ClaimStore> store_;       // keeper thread only
    std::jthread thread_;                   // last: joined before the members it uses go
};

}  // namespace exo
