#pragma once
// The batch's Redis claims (docs/design.md#claim and docs/design.md#complete): one
// pipelined claim for every pending record, one complete for the records the
// transaction settled, one release for the claims left open. Redis is only a
// cache of the truth in PostgreSQL: a failed complete or release costs
// latency (the claims expire after their lease), never correctness.
//
// Thread-safety: none; one thread of the worker (its lane's, BatchProtocol).
#include <functional>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/fate_policy.hpp"
#include "protocol/session_access.hpp"

namespace exo {

class Claims {
public:
    // `claim`: the claim section; `on_redis_down`: pipeline.on_redis_down. All
    // references outlive the claims.
    Claims(const ClaimConfig& claim, RedisDownPolicy on_redis_down, ClaimAccess& redis,
           PipelineStats& stats, spdlog::logger& log, FatePolicy& fate);

    // ACQUIRED / TAKEN_OVER: the record goes on with its token; DUPLICATE /
    // DEAD_LETTERED: finished; CONFLICT: NACKed; a key in error: that record
    // fails alone. Redis unreachable or a whole call failing throws RedisError
    // under on_redis_down: pause, and claims nothing under postgres_only (the
    // dedup row alone, token 0). With claim.store: postgres it claims nothing,
    // always, and never asks Redis: then complete() and release() have no token
    // to settle, and the lease keeper nothing to renew.
    void claim(Batch& batch);
    // Gives back the claims of the records that will not run in this batch's
    // transaction after all (put back by the work outside it), as claim() does
    // for the records held behind a CONFLICT; `leases` lets go of them first
    // (protocol/session_access.hpp). Never throws.
    void give_back_unrun(Batch& batch, ClaimLeases& leases);
    // Settles the claims of the finished records (COMPLETED with the result, or
    // DEAD_LETTERED for a duplicate whose row says so); `leases` lets go of them
    // first. Never throws.
    void complete(Batch& batch, ClaimLeases& leases);
    // Gives back every claim still open; nothing of the batch may be held by a
    // lease keeper any more. Never throws.
    void release(Batch& batch);

private:
    // A record Redis called a duplicate that finished otherwise (the dedup row
    // was missing, so it ran): counted and logged as an error. Never throws.
    void report_contradiction(const BatchRecord& record);

    // Releases the open claims of the records `which` picks, after `leases`
    // (if any) let go of them. Never throws.
    void give_back(Batch& batch, ClaimLeases* leases,
                   const std::function<bool(const BatchRecord&)>& which);

    const ClaimConfig& claim_;
    const RedisDownPolicy on_redis_down_;
    ClaimAccess& redis_;
    PipelineStats& stats_;
    spdlog::logger& log_;
    FatePolicy& fate_;
};

}  // namespace exo
