#include "latency_handler.hpp"

#include <chrono>

namespace exo::bench {

std::shared_ptr<std::vector<LatencySample>> LatencyRecorder::new_series() {
    auto s = std::make_shared<std::vector<LatencySample>>();
    std::lock_guard lock(mutex_);
    series_.push_back(s);
    return s;
}

std::vector<LatencySample> LatencyRecorder::samples() const {
    std::lock_guard lock(mutex_);
    std::vector<LatencySample> all;
    for (const auto& s : series_) all.insert(all.end(), s->begin(), s->end());
    return all;
}

void TimedLedgerHandler::handle_batch(BatchContext& ctx) {
    auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    for (const auto& r : ctx.records()) {
        auto produced_ms = r.record().timestamp_ms;
        if (r.attempt() == 1 && !r.rerun() && produced_ms >= 0)
            series_->emplace_back(produced_ms * 1000,
                                  static_cast<double>(now_us - produced_ms * 1000) / 1000.0);
    }
    inner_.handle_batch(ctx);
}

void register_timed_ledger(HandlerRegistry& registry, LatencyRecorder& recorder) {
    registry.add("ledger", [&recorder](const HandlerOptions&) {
        return std::make_unique<TimedLedgerHandler>(recorder.new_series());
    });
}

}  // namespace exo::bench
