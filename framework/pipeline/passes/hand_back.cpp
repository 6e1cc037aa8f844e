#include "pipeline/passes/hand_back.hpp"

namespace exo {
namespace {

// The record's Kafka timestamp (producer or broker time) to now, when it has one.
std::optional<std::chrono::microseconds> since_produced(const Record& record,
                                                        std::chrono::system_clock::time_point now) {
    if (record.timestamp_ms < 0) return std::nullopt;
    const auto produced =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(record.timestamp_ms));
    return std::chrono::duration_cast<std::chrono::microseconds>(now - produced);
}

}  // namespace

HandBack hand_back(Batch& batch, PipelineStats& stats) {
    HandBack out;
    const auto now = WorkerInbox::Clock::now();
    const auto wall_now = std::chrono::system_clock::now();
    for (auto& record : batch) {
        switch (record.fate) {
            case Fate::finished:
                if (record.pending.stalled) out.unstalled.push_back(record.pending.lane());
                out.finished.push_back({record.partition(), record.pending.record.offset});
                stats.record_finished(record.pending.record.topic.value, *record.outcome,
                                      std::chrono::duration_cast<std::chrono::microseconds>(
                                          now - record.pending.polled_at),
                                      since_produced(record.pending.record, wall_now));
                break;
            case Fate::park:
                // Counted by the worker once the inbox took it (it may refuse it).
                out.parked.push_back({std::move(record.pending), now + record.delay});
                break;
            case Fate::pending:       // not reached: every step leaves a fate
            case Fate::awaits_first:  // not reached: settle_repeated_keys decides
            case Fate::dead_letter:
            case Fate::requeue: {
                auto until = now + record.delay;
                auto& h = out.hold_until[record.pending.lane()];
                if (until > h) h = until;
                out.requeue.push_back(std::move(record.pending));
                break;
            }
        }
    }
    return out;
}

}  // namespace exo
