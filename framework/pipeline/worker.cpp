#include "pipeline/worker.hpp"

#include <spdlog/spdlog.h>

namespace exo {
namespace {

std::shared_ptr<spdlog::logger> worker_logger(int index) {
    auto name = "worker-" + std::to_string(index);
    if (auto existing = spdlog::get(name)) return existing;
    return spdlog::default_logger()->clone(name);
}

// What one held key may keep queued before it spills (worker_inbox.hpp): half
// the partition's bound, so the other half still fetches for its other keys.
std::size_t held_lane_cap(const PipelineConfig& p) {
    return static_cast<std::size_t>(std::max(1, p.max_queued_per_partition / 2));
}

}  // namespace

Worker::Worker(int index, WorkerContext context)
    : ctx_(std::move(context)),
      owner_(ctx_.owner_prefix + "/w" + std::to_string(index)),
      log_(worker_logger(index)),
      inbox_(ctx_.config.pipeline.claim_ahead ? 1 : ctx_.config.pipeline.concurrency,
             held_lane_cap(ctx_.config.pipeline),
             ParkLimits{static_cast<std::size_t>(ctx_.config.pipeline.max_parked_per_partition),
                        ctx_.config.pipeline.max_parked_bytes_per_partition}) {
    const auto& p = ctx_.config.pipeline;
    for (int i = 0; i < p.concurrency; ++i) {
        // A claim is re-entrant for its owner: slots must never share one.
        auto owner = p.concurrency == 1 ? owner_ : owner_ + "." + std::to_string(i);
        slots_.push_back(std::make_unique<Slot>(ctx_, owner, *log_));
    }
    if (slots_.front()->protocol.has_outside_work()) {
        outside_ = std::make_unique<OutsideWork>(p.outside_threads, ctx_.stats, *log_);
        for (auto& slot : slots_) slot->protocol.use_outside_threads(*outside_);
    }
    const int keepers = p.claim_ahead ? 2 : p.concurrency;
    for (int i = 0; i < keepers; ++i)
        lease_keepers_.push_back(std::make_unique<LeaseKeeper>(
            ctx_.config, slots_[p.claim_ahead ? 0 : i]->owner, ctx_.stats, log_));
}

Worker::~Worker() {
    request_stop();
    join();
}

void Worker::start() {
    if (!ctx_.config.pipeline.claim_ahead) {
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            Slot& slot = *slots_[i];
            LeaseKeeper& leases = *lease_keepers_[i];
            slot.thread = std::jthread(
                [this, &slot, &leases](std::stop_token stop) { run(stop, slot, leases); });
        }
        return;
    }
    slots_.front()->thread = std::jthread([this] { run_applying(); });
    claiming_ = std::jthread([this](std::stop_token stop) { run_claiming(stop); });
}

void Worker::request_stop() {
    // The applying thread stops once the claiming thread did and nothing waits.
    claiming_.request_stop();
    for (auto& slot : slots_) slot->thread.request_stop();
}

void Worker::join() {
    if (claiming_.joinable()) claiming_.join();
    for (auto& slot : slots_)
        if (slot->thread.joinable()) slot->thread.join();
}

bool Worker::healthy() const {
    return healthy_.load() && inbox_.stalled_lanes() == 0;
}

std::optional<std::chrono::steady_clock::time_point> Worker::busy_since() const {
    Rep since = claiming_since_.load();
    for (const auto& slot : slots_) {
        const Rep busy = slot->busy_since.load();
        if (busy != kIdle && (since == kIdle || busy < since)) since = busy;
    }
    if (since == kIdle) return std::nullopt;
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since));
}

bool Worker::redis_up() const {
    return redis_up_.load() && claiming_redis_up_.load();
}

bool Worker::postgres_up() const {
    return postgres_up_.load();
}

std::optional<Worker::Prepared> Worker::take_and_prepare(std::stop_token stop, Slot& slot,
                                                         LeaseKeeper& leases,
                                                         std::atomic<Rep>& since,
                                                         std::atomic<bool>& redis_up) {
    const auto& p = ctx_.config.pipeline;
    auto taken = inbox_.take_batch(static_cast<std::size_t>(p.batch_size), p.linger, stop);
    if (taken.records.empty()) return std::nullopt;  // stopping
    const auto now = std::chrono::steady_clock::now();
    since = now.time_since_epoch().count();
    Prepared prepared{taken.id, std::make_unique<Batch>(std::move(taken.records)),
                      BatchEnd::went_through, &leases, now};
    ctx_.stats.batches++;
    leases.start_batch();
    prepared.end = slot.protocol.prepare(*prepared.batch, leases);
    redis_up = slot.protocol.claiming_redis_up();
    return prepared;
}

void Worker::run(std::stop_token stop, Slot& slot, LeaseKeeper& leases) {
    slot.protocol.open_sessions();
    while (!stop.stop_requested())
        if (auto prepared = take_and_prepare(stop, slot, leases, slot.busy_since, redis_up_)) {
            const auto taken_at = prepared->taken_at;  // in hand since it was taken
            apply_and_settle(slot, std::move(*prepared), taken_at);
        }
}

void Worker::run_claiming(std::stop_token stop) {
    Slot& slot = *slots_.front();
    slot.protocol.open_claiming_session();
    std::size_t turn = 0;
    while (!stop.stop_requested()) {
        {
            // One prepared batch waits at most: its claims' leases run meanwhile.
            std::unique_lock lock(handover_mutex_);
            handover_changed_.wait(lock, stop, [&] { return !prepared_.has_value(); });
        }
        // The keeper not holding the batch being applied (batches alternate).
        auto prepared = take_and_prepare(stop, slot, *lease_keepers_[turn % lease_keepers_.size()],
                                         claiming_since_, claiming_redis_up_);
        claiming_since_ = kIdle;
        if (!prepared) continue;
        ++turn;
        {
            std::lock_guard lock(handover_mutex_);
            prepared_ = std::move(prepared);
        }
        handover_changed_.notify_all();
    }
    {
        std::lock_guard lock(handover_mutex_);
        claiming_done_ = true;
    }
    handover_changed_.notify_all();
}

void Worker::run_applying() {
    Slot& slot = *slots_.front();
    slot.protocol.open_sessions();
    for (;;) {
        std::optional<Prepared> next;
        {
            std::unique_lock lock(handover_mutex_);
            handover_changed_.wait(lock, [&] { return prepared_.has_value() || claiming_done_; });
            if (!prepared_) return;  // the claiming thread stopped and nothing waits
            next = std::move(prepared_);
            prepared_.reset();
        }
        handover_changed_.notify_all();
        // In hand from now: it waited for this thread, not on a dependency.
        apply_and_settle(slot, std::move(*next), std::chrono::steady_clock::now());
    }
}

void Worker::apply_and_settle(Slot& slot, Prepared prepared,
                              std::chrono::steady_clock::time_point since) {
    slot.busy_since = since.time_since_epoch().count();
    Batch& batch = *prepared.batch;
    LeaseKeeper& leases = *prepared.leases;
    BatchEnd end = prepared.end;
    if (end == BatchEnd::went_through) end = slot.protocol.apply(batch, leases);
    switch (end) {
        case BatchEnd::went_through:
            healthy_ = true;
            break;
        case BatchEnd::paused:
            healthy_ = false;
            break;
        case BatchEnd::failed:
            break;
    }
    slot.protocol.settle(batch, leases);

    auto back = hand_back(batch, ctx_.stats);
    for (const auto& lane : back.unstalled) inbox_.clear_stalled(lane);
    if (!back.finished.empty()) ctx_.on_finished(back.finished);
    // Counted once the inbox took them: a park refused at the bound is a dead letter.
    std::map<std::string, std::size_t> parked_by_topic;
    for (const auto& p : back.parked) ++parked_by_topic[p.record.record.topic.value];
    const auto refused = inbox_.finish_batch(prepared.id, std::move(back.requeue), back.hold_until,
                                             std::move(back.parked));
    for (const auto& tp : refused) --parked_by_topic[tp.topic.value];
    for (const auto& [topic, n] : parked_by_topic)
        if (n > 0) ctx_.stats.parked_record(topic, n);
    if (!refused.empty())
        log_->warn(
            "{} strict-sequence gap(s) refused a parked place (pipeline.max_parked_per_"
            "partition / max_parked_bytes_per_partition): dead-lettered",
            refused.size());
    slot.busy_since = kIdle;
    redis_up_ = slot.protocol.redis_up();
    postgres_up_ = slot.protocol.postgres_up();
}

}  // namespace exo
