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
                owner_, *log_, ctx_.outbox_doorbell),
      lease_keeper_(ctx_.config, owner_, ctx_.stats, log_) {}

Worker::~Worker() {
    request_stop();
    join();
}

void Worker::start() {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Worker::join() {
    if (thread_.joinable()) thread_.join();
}

void Worker::run(std::stop_token stop) {
    const auto& p = ctx_.config.pipeline;
    while (!stop.stop_requested()) {
        auto taken = inbox_.take_batch(static_cast<std::size_t>(p.batch_size), p.linger, stop);
        if (taken.empty()) continue;
        busy_since_ = std::chrono::steady_clock::now().time_since_epoch().count();
        run_batch(std::move(taken));
        busy_since_ = kIdle;
        redis_up_ = protocol_.redis_up();
        postgres_up_ = protocol_.postgres_up();
    }
}

void Worker::run_batch(std::vector<PendingRecord> taken) {
    Batch batch(std::move(taken));
    ctx_.stats.batches++;
    lease_keeper_.start_batch();
    switch (protocol_.transact(batch, lease_keeper_)) {
        case BatchEnd::went_through:
            healthy_ = true;
            break;
        case BatchEnd::paused:
            healthy_ = false;
            break;
        case BatchEnd::failed:
            break;
    }
    protocol_.settle(batch, lease_keeper_);

    auto back = hand_back(batch, ctx_.stats);
    for (const auto& tp : back.unstalled) inbox_.clear_stalled(tp);
    if (!back.finished.empty()) ctx_.on_finished(back.finished);
    inbox_.finish_batch(std::move(back.requeue), back.hold_until, std::move(back.parked));
}

}  // namespace exo
