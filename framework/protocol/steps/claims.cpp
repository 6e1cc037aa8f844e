#include "protocol/steps/claims.hpp"

#include "core/log_context.hpp"
#include "redis/redis_error.hpp"

namespace exo {

Claims::Claims(const ClaimConfig& claim, RedisDownPolicy on_redis_down, ClaimAccess& redis,
               PipelineStats& stats, spdlog::logger& log, FatePolicy& fate)
    : claim_(claim),
      on_redis_down_(on_redis_down),
      redis_(redis),
      stats_(stats),
      log_(log),
      fate_(fate) {}

namespace {

// Redis answered DUPLICATE / DEAD_LETTERED with the fingerprint of the copy the
// key was settled for, and it is not this copy's: a key reused for another
// payload, unless the binding ignores that. Such a record is not finished by
// Redis's word: like claim.verify_duplicates, it goes to its transaction without
// a claim, where the dedup row's answer (with the applied copy's coordinates)
// lets on_key_reuse decide. Costs no round trip for any other record.
bool redis_fingerprint_differs(const BatchRecord& record, const std::string& stored) {
    return record.binding != nullptr && record.binding->on_key_reuse != KeyReusePolicy::ignore &&
           key_reuse_verdict(stored, record.fingerprint, record.binding->on_key_reuse) !=
               KeyReuse::none;
}

}  // namespace

void Claims::claim(Batch& batch) {
    std::vector<BatchRecord*> claiming;
    std::vector<std::string> keys;
    for (auto& record : batch)
        if (record.is_pending()) {
            claiming.push_back(&record);
            keys.push_back(record.key);
        }
    if (keys.empty()) return;
    // claim.store: postgres is this path always (ClaimAccess hands out no
    // store): no token, the dedup row the only fence.
    const bool postgres_only =
        !claim_.in_redis() || on_redis_down_ == RedisDownPolicy::postgres_only;
    ClaimStore* claims = redis_.claims();
    if (claims == nullptr) {
        if (postgres_only) return;
        throw RedisIoError("Redis is unreachable (on_redis_down: pause)");
    }
    std::vector<ClaimResult> results;
    try {
        auto before = redis_.round_trips();
        results = claims->claim(keys, claim_.lease);
        stats_.redis_round_trips += redis_.round_trips() - before;
    } catch (const RedisError& e) {
        // A whole call failed (claim() gave back what the other calls acquired):
        // an outage. Only a closed connection is dropped.
        redis_.failed();
        if (postgres_only) {
            log_.warn("Redis failed ({}); continuing on the PostgreSQL dedup row alone", e.what());
            return;
        }
        throw;
    }
    redis_.answered();
    for (std::size_t n = 0; n < claiming.size(); ++n) {
        auto& record = *claiming[n];
        const auto& r = results[n];
        switch (r.status) {
            case ClaimStatus::acquired:
            case ClaimStatus::taken_over:
                record.token = r.token;
                break;
            case ClaimStatus::duplicate:
            case ClaimStatus::dead_lettered:
                if (!record.is_pending()) break;
                if (claim_.verify_duplicates ||
                    redis_fingerprint_differs(record, r.stored_fingerprint)) {
                    // No token: the record goes to its transaction like a
                    // postgres_only one, where the dedup row answers.
                    record.redis_said_duplicate = true;
                    stats_.redis_duplicates_verified++;
                    break;
                }
                record.finish_duplicate(Outcome::duplicate_redis,
                                        r.status == ClaimStatus::duplicate
                                            ? StoredOutcome::applied
                                            : StoredOutcome::dead_lettered,
                                        r.stored_result,
                                        // What a later copy in the batch is compared
                                        // with (repeated_keys.hpp).
                                        r.stored_fingerprint);
                break;
            case ClaimStatus::failed: {
                // This key alone: its record fails, counted and bounded, its
                // partition held; the rest of the batch goes on. Loud, because
                // only an operator can repair the key.
                const auto& pr = record.pending.record;
                LogContext log_context(pr.topic, pr.partition, pr.offset, record.key,
                                       &record.pending.trace);
                log_.error(
                    "the Redis claim of key '{}' failed ({}); its record fails this attempt and "
                    "is dead-lettered after max_attempts: delete or repair that Redis key",
                    record.key, r.error);
                if (record.is_pending())
                    fate_.record_failed(batch, record, Failure::retryable, r.error);
                break;
            }
            case ClaimStatus::conflict:
                fate_.claim_conflict(batch, record, r.retry_after);
                break;
        }
    }
    // The records held behind a CONFLICT or a failed key of their partition
    // were claimed in the same call but do not run in this batch. Kept until
    // settle(), their claims would answer CONFLICT to the other workers' copies
    // of those keys for as long as this batch's transaction runs, and those
    // workers would hold their partitions behind them in turn: with keys
    // repeated across partitions and big batches, a storm of NACKs feeding
    // itself. Given back now, in one more round trip (no lease keeper holds
    // this batch's claims yet).
    give_back(batch, nullptr, [](const BatchRecord& record) { return !record.is_pending(); });
}

void Claims::give_back_unrun(Batch& batch, ClaimLeases& leases) {
    give_back(batch, &leases, [](const BatchRecord& record) {
        return std::holds_alternative<fate::Requeue>(record.fate());
    });
}

void Claims::complete(Batch& batch, ClaimLeases& leases) {
    std::vector<CompleteRequest> requests;
    for (auto& record : batch) {
        if (record.is_finished() && record.redis_said_duplicate) report_contradiction(record);
        if (!record.is_finished() || !record.token) continue;
        if (record.outcome() == Outcome::duplicate_redis) continue;  // Redis said so itself
        requests.push_back({record.key, *record.token, record.result(), record.stored(),
                            record.stored_fingerprint()});
        record.token.reset();  // the claim is settled one way or the other
    }
    if (requests.empty()) return;
    leases.hold(batch.open_claims());  // let go first: its renewals' LOST is then ours
    ClaimStore* claims = redis_.claims();
    if (claims == nullptr) return;
    try {
        auto before = redis_.round_trips();
        auto statuses = claims->complete(requests, claim_.completed_ttl);
        stats_.redis_round_trips += redis_.round_trips() - before;
        for (auto s : statuses)
            if (s == FinishStatus::lost) stats_.lost_completions++;
        redis_.answered();  // Redis answers again: a failed complete no longer reports it down
    } catch (const RedisError& e) {
        // The effects are committed and the dedup rows say so: a claim left
        // PROCESSING expires after its lease and the next owner finds the row.
        log_.warn("could not mark {} claims completed (harmless, PostgreSQL holds the truth): {}",
                  requests.size(), e.what());
        redis_.failed();
    }
}

void Claims::report_contradiction(const BatchRecord& record) {
    if (record.outcome() == Outcome::duplicate_postgres ||
        record.outcome() == Outcome::duplicate_in_batch || record.key_reused())
        return;  // the dedup row agreed with Redis
    stats_.redis_duplicates_contradicted++;
    const auto& pr = record.pending.record;
    LogContext log_context(pr.topic, pr.partition, pr.offset, record.key, &record.pending.trace);
    log_.error(
        "Redis answered DUPLICATE for key '{}' but PostgreSQL has no dedup row for it, so the "
        "record ran ({}): someone wrote under the claim prefix, or this Redis holds another "
        "database's claims; check who can write to Redis (docs/operations.md, Security)",
        record.key, to_string(*record.outcome()));
}

void Claims::release(Batch& batch) {
    // Not settled by complete(): give it back (the keeper holds nothing any more).
    give_back(batch, nullptr, [](const BatchRecord&) { return true; });
}

void Claims::give_back(Batch& batch, ClaimLeases* leases,
                       const std::function<bool(const BatchRecord&)>& which) {
    std::vector<TokenRequest> requests;
    for (auto& record : batch)
        if (record.token && which(record)) {
            requests.push_back({record.key, *record.token});
            record.token.reset();
        }
    if (requests.empty()) return;
    if (leases) leases->hold(batch.open_claims());  // let go first: its renewals' LOST is ours
    ClaimStore* claims = redis_.claims();
    if (claims == nullptr) return;
    try {
        claims->release(requests);
        redis_.answered();
    } catch (const RedisError& e) {
        // The claims expire after their lease; only latency is lost.
        log_.warn("could not release {} claims: {}", requests.size(), e.what());
        redis_.failed();
    }
}

}  // namespace exo
