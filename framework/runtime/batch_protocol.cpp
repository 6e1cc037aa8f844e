#include "runtime/batch_protocol.hpp"

#include "core/text.hpp"
#include "protocol/steps/keys.hpp"
#include "protocol/steps/repeated_keys.hpp"

namespace exo {
namespace {

// "exo/r3 <group>@<host>:<pid>:<n>" for owner "<group>@<host>:<pid>:<n>/r3":
// the runner first, because PostgreSQL keeps only 63 bytes of a name.
std::string application_name(const std::string& owner) {
    const auto slash = owner.rfind('/');
    if (slash == std::string::npos) return "exo " + owner;
    return "exo/" + owner.substr(slash + 1) + " " + owner.substr(0, slash);
}

}  // namespace

BatchProtocol::BatchProtocol(const Config& config, const HandlerRegistry& registry,
                             const ProducerOptions& dead_letter_producer, PipelineStats& stats,
                             Failpoints& failpoints, const std::string& owner, spdlog::logger& log,
                             OutboxDoorbell* outbox_doorbell)
    : config_(config),
      stats_(stats),
      failpoints_(failpoints),
      log_(log),
      handlers_(config.bindings, registry),
      fate_(config.pipeline, stats, log),
      redis_(config.claim, config.redis, config.kafka.group_id, owner, log,
             [this](int failures) { return fate_.delay(failures); }),
      claims_(config.claim, config.pipeline.on_redis_down, redis_, stats, log, fate_),
      postgres_(
          config.postgres, [this](pqxx::connection& c) { handlers_.prepare(c); }, log,
          application_name(owner)),
      dead_letters_(DeadLetterSettings::of(config), dead_letter_producer, stats, log, postgres_,
                    redis_, [this](int failures) { return fate_.delay(failures); }),
      transactions_(PassContext{config.kafka.group_id, config.outbox.emit_limits,
                                config.pipeline.framework_sql, handlers_, stats, log, fate_,
                                outbox_doorbell, &failpoints},
                    postgres_),
      on_this_thread_(0, stats, log) {}

void BatchProtocol::open_sessions() {
    try {
        postgres_.connection();
    } catch (...) {
        postgres_.drop();  // unreachable, or a handler cannot prepare: the first batch says
    }
    redis_.claims();
}

BatchEnd BatchProtocol::prepare(Batch& batch, LeaseKeeper& leases) {
    try {
        key_step(batch, config_.bindings, fate_.delay(1));
        claims_.claim(batch);
        failpoints_.hit("after_claim");
        leases.hold(batch.open_claims());
    } catch (const std::exception& e) {
        return batch_failed(batch, e);
    } catch (...) {
        return batch_failed(batch, std::runtime_error("an exception that is not a std::exception"));
    }
    return BatchEnd::went_through;
}

BatchEnd BatchProtocol::apply(Batch& batch, LeaseKeeper& leases) {
    try {
        // Before BEGIN, so no transaction waits on another service; after the
        // verdicts carried from an earlier try, so what they hold calls nothing.
        if (handlers_.any_outside()) {
            take_carried_dead_letters(batch);
            outside_->run(batch, handlers_);
            // What was put back behind a failed call does not run now: its
            // claims would NACK other workers' copies of its keys meanwhile.
            claims_.give_back_unrun(batch, leases);
        }
        transactions_.run(batch);
    } catch (const std::exception& e) {
        return batch_failed(batch, e);
    } catch (...) {
        // Nothing exo throws gets here; a handler's foreign exception escaping a
        // step must not end the worker thread (and the process) all the same.
        return batch_failed(batch, std::runtime_error("an exception that is not a std::exception"));
    }
    failpoints_.hit("after_pg_commit");
    dependency_failures_ = 0;
    postgres_.answered();
    return BatchEnd::went_through;
}

BatchEnd BatchProtocol::transact(Batch& batch, LeaseKeeper& leases) {
    const BatchEnd prepared = prepare(batch, leases);
    return prepared == BatchEnd::went_through ? apply(batch, leases) : prepared;
}

void BatchProtocol::settle(Batch& batch, LeaseKeeper& leases) {
    // Every claim is let go of by the keeper before Redis finishes it, so a
    // renewal in flight that then answers LOST is not a lease lost
    // (runtime/sessions/lease_keeper.hpp). Abandoned claims (a revoke's deadline passed)
    // are not renewed again: the keeper ignores these hold()s then.
    // What a committed transaction settled is completed even when later records
    // of the batch failed (batch_failed leaves it alone).
    claims_.complete(batch, leases);
    // Dead letters decided before a failure (a bad key, a record out of attempts)
    // are recorded whatever happened to the rest of the batch.
    dead_letters_.publish(batch, leases);
    leases.clear();
    // A batch in hand is always finished, even when stopping: its claims and offsets settle.
    claims_.release(batch);
    // Every first copy has its durable fate now: its later copies end with it.
    settle_repeated_keys(batch);
}

// PostgreSQL failures and a handler's come only from apply().
BatchEnd BatchProtocol::batch_failed(Batch& batch, const std::exception& e) {
    stats_.batch_failures++;
    const Failure failure = classify(e);
    const bool prepare_failed = failure == Failure::handler_unprepared;
    const bool pg_gone = failure == Failure::postgres_down;
    if (pg_gone || prepare_failed) postgres_.drop();
    // Each dependency has its own backoff; a handler that cannot prepare is
    // retried slowly, at the longest.
    std::chrono::milliseconds delay = fate_.delay(1);
    if (pg_gone) delay = fate_.delay(postgres_.failed());
    if (failure == Failure::redis_down) delay = fate_.delay(std::max(1, redis_.failures()));
    if (failure == Failure::dependency_down) delay = fate_.delay(++dependency_failures_);
    if (prepare_failed) delay = config_.pipeline.retry_backoff_max;

    const std::string why = printable_text(e.what());
    if (prepare_failed) {
        if (!postgres_.prepare_failing())
            log_.error(
                "{}; {} records wait and the process reports not ready until it succeeds "
                "(retried every {} ms)",
                why, batch.size(), delay.count());
        postgres_.mark_prepare_failing();
    } else if (!pg_gone || !postgres_.outage_logged()) {
        // Once per outage, not once per retry: an operator needs the state change.
        log_.warn("batch of {} put back ({}): {}", batch.size(),
                  counts_as_attempt(failure)       ? "counted as an attempt of its records"
                  : failure == Failure::contention ? "a lock held elsewhere, uncounted"
                                                   : "dependency down",
                  why);
    }
    if (pg_gone) postgres_.mark_outage_logged();
    fate_.batch_failed(batch, failure, delay, why);
    return pauses_the_worker(failure) ? BatchEnd::paused : BatchEnd::failed;
}

}  // namespace exo
