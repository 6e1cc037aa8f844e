#pragma once
// The ledger handler with a stopwatch: records, per record, how long after it
// was produced (the Kafka CreateTime the producer set) its handler started.
// Only the paced scenario uses it: there the produce time is meaningful. It
// runs exactly the ledger handler's SQL, so the pipeline's work is unchanged.
//
// Thread-safety: each handler instance (one per worker thread) appends to its
// own series; LatencyRecorder::samples() may only be called after the workers
// stopped (the daemon's run() returned).
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "bench_ledger.hpp"
#include "ledger.hpp"
#include "protocol/handler_registry.hpp"

namespace exo::bench {

// (produce time in wall-clock microseconds, produce -> handler start in ms)
using LatencySample = std::pair<std::int64_t, double>;

class LatencyRecorder {
public:
    std::shared_ptr<std::vector<LatencySample>> new_series();
    std::vector<LatencySample> samples() const;  // every series

private:
    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<std::vector<LatencySample>>> series_;
};

class TimedLedgerHandler final : public BatchHandler {
public:
    explicit TimedLedgerHandler(std::shared_ptr<std::vector<LatencySample>> series)
        : series_(std::move(series)) {}
    void prepare(pqxx::connection_base& connection) override { inner_.prepare(connection); }
    void handle_batch(BatchContext& ctx) override;

private:
    handlers::LedgerHandler inner_{bench_ledger_options()};
    std::shared_ptr<std::vector<LatencySample>> series_;
};

// Registers "ledger" as TimedLedgerHandler feeding `recorder` (which must outlive the registry).
void register_timed_ledger(HandlerRegistry& registry, LatencyRecorder& recorder);

}  // namespace exo::bench
