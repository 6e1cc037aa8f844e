#pragma once
// Counters of what the pipeline did, shared by all workers (relaxed atomics:
// they are reports, not synchronization). Read by the demo, tests and bench.
#include <atomic>
#include <cstdint>
#include <string>

#include "pipeline/latency_histogram.hpp"

namespace exo {

struct PipelineStats {
    std::atomic<std::uint64_t> polled{0};
    std::atomic<std::uint64_t> applied{0};              // handler ran and committed
    std::atomic<std::uint64_t> duplicates_redis{0};     // answered by the Redis claim
    std::atomic<std::uint64_t> duplicates_postgres{0};  // caught by the dedup row
    std::atomic<std::uint64_t> stale{0};                // older sequence: recorded, no effect
    std::atomic<std::uint64_t> conflicts{0};            // NACKed: another owner held the key
    std::atomic<std::uint64_t> retries{0};              // retryable failures retried
    std::atomic<std::uint64_t> dead_lettered{0};
    std::atomic<std::uint64_t> dead_letter_failures{0};  // DLQ produce failed: kept, retried
    std::atomic<std::uint64_t> lost_completions{0};      // complete() found the claim taken over
    std::atomic<std::uint64_t> lease_renewals{0};        // claims extended for slow handlers
    std::atomic<std::uint64_t> leases_lost{0};           // extension found the claim taken over
    std::atomic<std::uint64_t> assignments{0};           // rebalance callbacks that gave partitions
    std::atomic<std::uint64_t> revocations{0};           // ... and that took them (lost included)
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> dedup_rows_pruned{0};  // dedup rows and gap sightings pruned
    std::atomic<std::uint64_t> batch_failures{0};     // whole batch put back (dependency down)
    std::atomic<std::uint64_t> redis_round_trips{0};
    std::atomic<std::uint64_t> postgres_round_trips{0};
    LatencyHistogram latency;  // poll -> durable outcome, per finished record

    std::uint64_t finished() const {
        return applied + duplicates_redis + duplicates_postgres + stale + dead_lettered;
    }
    std::string summary() const;
};

}  // namespace exo
