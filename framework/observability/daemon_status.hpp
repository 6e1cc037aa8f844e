#pragma once
// A snapshot of what a running daemon is doing, for the observability
// endpoint (/status, /healthz, /readyz and the gauges of /metrics). The poll
// thread publishes one every few hundred milliseconds (Daemon::status());
// readers get a copy and never touch the pipeline's own state.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <exo/types.hpp>

namespace exo {

struct PartitionStatus {
    TopicPartition partition{};
    bool paused = false;   // fetching paused: its queue is full
    bool stalled = false;  // a record that cannot even be dead-lettered holds it
    // The next offset to read, as this member last committed it (nullopt: none yet).
    std::optional<std::int64_t> committed{};
    std::size_t queued = 0;     // waiting in the scheduler's queue (parked ones excluded)
    std::size_t in_flight = 0;  // handed to a batch runner, in a batch now
    // Records holding a place among its strict-sequence gaps waiting for a
    // predecessor (parked, or back in a batch to try again), and their bytes:
    // what pipeline.max_parked_per_partition and max_parked_bytes_per_partition bound.
    std::size_t parked = 0;
    std::size_t parked_bytes = 0;
    // Bytes of the queued and in-flight records, as pipeline.max_queued_bytes_per_partition
    // counts them (scheduling/record_limits.hpp).
    std::size_t bytes = 0;
    // Offsets from the lowest unfinished record to the highest polled: what a
    // crash now would read again (0: nothing unfinished).
    std::int64_t unfinished_window = 0;
    // The partition's end less the group's committed offset (librdkafka's
    // consumer_lag, every statistics.interval.ms), when known.
    std::optional<std::int64_t> lag{};
};

// One batch runner (pipeline.concurrency of them).
struct RunnerStatus {
    int index = 0;
    // Since when it works on the batch in hand; nullopt while it waits for records.
    std::optional<std::chrono::steady_clock::time_point> busy_since;
};

struct DaemonStatus {
    using Clock = std::chrono::steady_clock;
    bool running = false;           // the poll loop started and has not stopped
    Clock::time_point last_poll{};  // the poll loop's last turn
    // The group gave this member an assignment, possibly empty (a spare member).
    bool joined = false;
    std::vector<PartitionStatus> partitions;  // assigned to this member
    std::vector<RunnerStatus> runners;
    // The dependencies answered on the latest batch's use of them, the handlers
    // prepared, no lane stalled (BatchRunners::healthy()).
    bool pipeline_healthy = true;
    // Batches being run now, and lanes (a partition, or one
    // ordering key of it) held by a record that retries later (NACK, retry,
    // stall) with the records waiting in them.
    std::size_t batches_in_flight = 0;
    std::size_t held_lanes = 0;
    std::size_t waiting_behind_held = 0;       // behind the first record of each
    std::size_t keys_waiting_behind_held = 0;  // their Kafka keys, the held record's left out
    // As last observed: Redis and PostgreSQL by the latest batch's use of
    // them, Kafka by librdkafka's statistics (a broker connection up).
    bool redis_up = true;
    // False with claim.store: postgres: the daemon has no Redis to be up or
    // down, so /metrics and /status do not list it.
    bool redis_used = true;
    bool postgres_up = true;
    bool kafka_up = false;
};

}  // namespace exo
