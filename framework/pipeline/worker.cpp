#include "pipeline/worker.hpp"

#include <spdlog/spdlog.h>

namespace exo {
namespace {

std::shared_ptr<spdlog::logger> worker_logger(int index) {
    auto name = "worker-" + std::to_string(index);
    if (auto existing = spdlog::get(name)) return existing;
    return spdlog::default_logger()->clone(name);
}

}  // namespace

Worker::Worker(int index, WorkerContext context)
    : ctx_(std::move(context)),
      owner_(ctx_.owner_prefix + "/w" + std::to_string(index)),
      log_(worker_logger(index)),
      protocol_(ctx_.config, ctx_.handlers, ctx_.dead_letter_producer, ctx_.stats, ctx_.failpoints,
                owner_, *log_, ctx_.outbox_doorbell) {
    const int keepers = ctx_.config.pipeline.claim_ahead ? 2 : 1;
    for (int i = 0; i < keepers; ++i)
        lease_keepers_.push_back(
            std::make_unique<LeaseKeeper>(ctx_.config, owner_, ctx_.stats, log_));
}

Worker::~Worker() {
    request_stop();
    join();
}

void Worker::start() {
    if (!ctx_.config.pipeline.claim_ahead) {
        applying_ = std::jthread([this](std::stop_token stop) { run(stop); });
        return;
    }
    applying_ = std::jthread([this] { run_applying(); });
    claiming_ = std::jthread([this](std::stop_token stop) { run_claiming(stop); });
}

void Worker::request_stop() {
    // The applying thread stops once the claiming thread did and nothing waits.
    claiming_.request_stop();
    applying_.request_stop();
}

void Worker::join() {
    if (claiming_.joinable()) claiming_.join();
    if (applying_.joinable()) applying_.join();
}

std::optional<Worker::Prepared> Worker::take_and_prepare(std::stop_token stop,
                                                         LeaseKeeper& leases) {
    const auto& p = ctx_.config.pipeline;
    auto taken = inbox_.take_batch(static_cast<std::size_t>(p.batch_size), p.linger, stop);
    if (taken.empty()) return std::nullopt;  // stopping
    const auto now = std::chrono::steady_clock::now();
    claiming_since_ = now.time_since_epoch().count();
    Prepared prepared{std::make_unique<Batch>(std::move(taken)), BatchEnd::went_through, &leases,
                      now};
    ctx_.stats.batches++;
    leases.start_batch();
    prepared.end = protocol_.prepare(*prepared.batch, leases);
    claiming_redis_up_ = protocol_.claiming_redis_up();
    claiming_since_ = kIdle;
    return prepared;
}

void Worker::run(std::stop_token stop) {
    while (!stop.stop_requested())
        if (auto prepared = take_and_prepare(stop, *lease_keepers_.front())) {
            const auto taken_at = prepared->taken_at;  // in hand since it was taken
            apply_and_settle(std::move(*prepared), taken_at);
        }
}

void Worker::run_claiming(std::stop_token stop) {
    std::size_t turn = 0;
    while (!stop.stop_requested()) {
        {
            // One prepared batch waits at most: its claims' leases run meanwhile.
            std::unique_lock lock(handover_mutex_);
            handover_changed_.wait(lock, stop, [&] { return !prepared_.has_value(); });
        }
        // The keeper not holding the batch being applied (batches alternate).
        auto prepared = take_and_prepare(stop, *lease_keepers_[turn % lease_keepers_.size()]);
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
        apply_and_settle(std::move(*next), std::chrono::steady_clock::now());
    }
}

void Worker::apply_and_settle(Prepared prepared, std::chrono::steady_clock::time_point since) {
    busy_since_ = since.time_since_epoch().count();
    Batch& batch = *prepared.batch;
    LeaseKeeper& leases = *prepared.leases;
    BatchEnd end = prepared.end;
    if (end == BatchEnd::went_through) end = protocol_.apply(batch);
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
    protocol_.settle(batch, leases);

    auto back = hand_back(batch, ctx_.stats);
    for (const auto& tp : back.unstalled) inbox_.clear_stalled(tp);
    if (!back.finished.empty()) ctx_.on_finished(back.finished);
    inbox_.finish_batch(std::move(back.requeue), back.hold_until, std::move(back.parked));
    busy_since_ = kIdle;
    redis_up_ = protocol_.redis_up();
    postgres_up_ = protocol_.postgres_up();
}

}  // namespace exo
