#include "runtime/worker.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <stdexcept>

namespace exo {
namespace {

std::shared_ptr<spdlog::logger> runners_logger() {
    if (auto existing = spdlog::get("runners")) return existing;
    return spdlog::default_logger()->clone("runners");
}

// What one held key may keep queued before it spills (worker_inbox.hpp): half
// the partition's bound, so the other half still fetches for its other keys.
std::size_t held_lane_cap(const PipelineConfig& p) {
    return static_cast<std::size_t>(std::max(1, p.max_queued_per_partition / 2));
}

}  // namespace

BatchRunners::BatchRunners(RunnersContext context)
    : ctx_(std::move(context)),
      log_(runners_logger()),
      inbox_(ctx_.config.pipeline.concurrency, held_lane_cap(ctx_.config.pipeline),
             ParkLimits{static_cast<std::size_t>(ctx_.config.pipeline.max_parked_per_partition),
                        ctx_.config.pipeline.max_parked_bytes_per_partition}) {
    const auto& p = ctx_.config.pipeline;
    for (int i = 0; i < p.concurrency; ++i) {
        // A claim is re-entrant for its owner: runners must never share one.
        slots_.push_back(
            std::make_unique<Slot>(ctx_, ctx_.owner_prefix + "/r" + std::to_string(i), log_));
    }
    if (slots_.front()->protocol.has_outside_work()) {
        outside_ = std::make_unique<OutsideWork>(p.outside_threads, ctx_.stats, *log_);
        for (auto& slot : slots_) slot->protocol.use_outside_threads(*outside_);
    }
}

BatchRunners::~BatchRunners() {
    request_stop();
    join();
}

void BatchRunners::start() {
    for (auto& slot : slots_)
        slot->thread =
            std::jthread([this, &slot = *slot](std::stop_token stop) { run(stop, slot); });
}

void BatchRunners::request_stop() {
    for (auto& slot : slots_) slot->thread.request_stop();
}

void BatchRunners::join() {
    for (auto& slot : slots_)
        if (slot->thread.joinable()) slot->thread.join();
}

bool BatchRunners::healthy() const {
    return healthy_.load() && inbox_.stalled_lanes() == 0;
}

void BatchRunners::abandon_leases(const std::vector<TopicPartition>& partitions) {
    bool any = false;
    for (auto& slot : slots_) {
        std::lock_guard lock(slot->partitions_mutex);
        if (std::none_of(partitions.begin(), partitions.end(),
                         [&](const TopicPartition& tp) { return slot->partitions.contains(tp); }))
            continue;
        slot->leases.abandon();
        any = true;
    }
    // Every batch in run() stops calling (OutsideWork knows no partitions): a
    // batch of another partition puts its uncalled records back and calls them
    // in its next try, which costs time, never a record.
    if (any && outside_) outside_->abandon_calls();
}

std::optional<std::chrono::steady_clock::time_point> BatchRunners::busy_since(
    std::size_t index) const {
    const Rep since = slots_.at(index)->busy_since.load();
    if (since == kIdle) return std::nullopt;
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since));
}

bool BatchRunners::redis_up() const {
    return redis_up_.load();
}

bool BatchRunners::postgres_up() const {
    return postgres_up_.load();
}

void BatchRunners::run(std::stop_token stop, Slot& slot) {
    slot.protocol.open_sessions();
    const auto& p = ctx_.config.pipeline;
    while (!stop.stop_requested()) {
        auto taken = inbox_.take_batch(static_cast<std::size_t>(p.batch_size), p.linger, stop);
        if (!taken.records.empty()) run_batch(slot, std::move(taken));  // empty: stopping
    }
}

HandBack BatchRunners::hand_back_or_abort(Batch& batch) {
    try {
        return hand_back(batch, ctx_.stats);
    } catch (const std::logic_error& e) {
        // A step left a record without a final fate: a bug in exo, not a
        // record's failure. Going on could commit an offset past unapplied
        // work, so the process stops; the log names the batch first (an
        // exception escaping the thread would only reach stderr).
        const auto& first = batch.begin()->pending.record;
        log_->critical(
            "a batch of {} records from {}[{}] offset {} ended with a record without a final "
            "fate: {}; stopping the process (nothing past the batch was committed; please "
            "report this with the log)",
            batch.size(), first.topic.value, first.partition.value, first.offset.value, e.what());
        log_->flush();
        std::abort();
    }
}

void BatchRunners::run_batch(Slot& slot, WorkerInbox::Taken taken) {
    slot.busy_since = std::chrono::steady_clock::now().time_since_epoch().count();
    {
        std::lock_guard lock(slot.partitions_mutex);
        for (const auto& r : taken.records) slot.partitions.insert(r.record.topic_partition());
    }
    Batch batch(std::move(taken.records));  // never moves: its records point into it
    LeaseKeeper& leases = slot.leases;
    ctx_.stats.batches++;
    leases.start_batch();
    BatchEnd end = slot.protocol.prepare(batch, leases);
    redis_up_ = slot.protocol.redis_up();  // what the claims saw, while the transaction runs
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

    auto back = hand_back_or_abort(batch);
    for (const auto& lane : back.unstalled) inbox_.clear_stalled(lane);
    if (!back.finished.empty()) ctx_.on_finished(back.finished);
    // Counted once the inbox took them: a park refused at the bound is a dead letter.
    std::map<std::string, std::size_t> parked_by_topic;
    for (const auto& p : back.parked) ++parked_by_topic[p.record.record.topic.value];
    const auto refused = inbox_.finish_batch(taken.id, std::move(back.requeue), back.hold_until,
                                             std::move(back.parked));
    for (const auto& tp : refused) --parked_by_topic[tp.topic.value];
    for (const auto& [topic, n] : parked_by_topic)
        if (n > 0) ctx_.stats.parked_record(topic, n);
    if (!refused.empty())
        log_->warn(
            "{} strict-sequence gap(s) refused a parked place (pipeline.max_parked_per_"
            "partition / max_parked_bytes_per_partition): dead-lettered",
            refused.size());
    {
        std::lock_guard lock(slot.partitions_mutex);
        slot.partitions.clear();
    }
    slot.busy_since = kIdle;
    redis_up_ = slot.protocol.redis_up();
    postgres_up_ = slot.protocol.postgres_up();
}

}  // namespace exo
