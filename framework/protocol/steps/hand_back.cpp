#include "protocol/steps/hand_back.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

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

// The fates a record leaves a settled batch with, one per list of HandBack.
using FinalFate = std::variant<fate::Finished, fate::Requeue, fate::Park>;

// The one place hand_back's precondition is checked (hand_back.hpp).
FinalFate final_fate(const BatchRecord& record) {
    return std::visit(
        [&](const auto& f) -> FinalFate {
            using F = std::decay_t<decltype(f)>;
            if constexpr (std::is_same_v<F, fate::Pending> ||
                          std::is_same_v<F, fate::AwaitsFirst> ||
                          std::is_same_v<F, fate::DeadLetter>)
                throw std::logic_error("hand_back: record at offset " +
                                       std::to_string(record.pending.record.offset.value) +
                                       " has no final fate (" + std::string(F::name) + ")");
            else
                return f;
        },
        record.fate());
}

template <class... Arms>
struct Visitor : Arms... {
    using Arms::operator()...;
};

}  // namespace

HandBack hand_back(Batch& batch, PipelineStats& stats) {
    HandBack out;
    const auto now = WorkerInbox::Clock::now();
    const auto wall_now = std::chrono::system_clock::now();
    // All checked before anything moves: a refused batch is left as it was.
    std::vector<FinalFate> fates;
    fates.reserve(batch.size());
    for (const auto& record : batch) fates.push_back(final_fate(record));
    auto fate = fates.begin();
    for (auto& record : batch) {
        std::visit(
            Visitor{
                [&](const fate::Finished& finished) {
                    if (record.pending.stalled) out.unstalled.push_back(record.pending.lane());
                    out.finished.push_back({record.partition(), record.pending.record.offset});
                    stats.record_finished(record.pending.record.topic.value, finished.outcome,
                                          std::chrono::duration_cast<std::chrono::microseconds>(
                                              now - record.pending.polled_at),
                                          since_produced(record.pending.record, wall_now));
                },
                [&](const fate::Park& park) {
                    // Counted by the worker once the inbox took it (it may refuse it).
                    out.parked.push_back({record.leave_batch(), now + park.delay});
                },
                [&](const fate::Requeue& requeued) {
                    // Back to the front of its lane, held until the latest retry time.
                    auto& until = out.hold_until[record.pending.lane()];
                    until = std::max(until, now + requeued.delay);
                    out.requeue.push_back(record.leave_batch());
                },
            },
            *fate++);
    }
    return out;
}

}  // namespace exo
