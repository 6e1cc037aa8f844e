#pragma once
// The outbox relay (docs/outbox.md): publishes the rows of exo_outbox that
// handlers' committed transactions wrote. Its own thread, its own PostgreSQL
// session and its own idempotent producer, so a slow or failing relay (Kafka
// or PostgreSQL down) never delays a batch: it retries with backoff, logs, and
// counts (exo_outbox_* metrics); readiness does not depend on it.
//
// One round: BEGIN; claim rows of this daemon's group (outbox_rows.hpp: per
// (topic, key) the pending rows from its head, heads locked FOR UPDATE SKIP
// LOCKED, within outbox.batch_size rows and outbox.max_round_bytes); produce
// them with the header exo-outbox-id; wait for Kafka's acknowledgements; mark
// the acknowledged ones sent (per unit only the acknowledged prefix, so a
// unit's order holds); park the units whose head failed; COMMIT. A crash after the acknowledgement
// and before the COMMIT leaves the rows pending: they are published again, with the same
// exo-outbox-id, and a downstream binding keyed by it applies them once.
// Failpoint outbox_after_ack sits in that window.
//
// Wakes when its doorbell rings (a transaction of this process that emitted
// committed: outbox_doorbell.hpp), on NOTIFY exo_outbox (`exo outbox reroute`,
// writers of older versions), at the latest every outbox.poll_interval (rows
// another process committed), and at once while rounds find rows.
//
// Lifecycle: start() once; stop() (or the destructor) stops and joins. The
// daemon starts it beside the workers and stops it after them.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <pqxx/connection>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "kafka/producer.hpp"
#include "metrics/pipeline_stats.hpp"
#include "outbox/outbox_doorbell.hpp"
#include "outbox/outbox_rows.hpp"

namespace exo {

// The relay's producer: `base` (the dead-letter producer's) with librdkafka's
// batch.size (a MessageSet's bytes, default 1,000,000) kept under the smallest
// max.message.bytes the brokers reported for the topics of outbox.topics. A broker
// refuses a whole batch over its topic's limit (MSG_SIZE_TOO_LARGE) although each
// record in it fits, and the relay would park and retry rows emit() accepted.
ProducerOptions relay_producer(ProducerOptions base, const EmitLimits& limits);

class OutboxRelay {
public:
    // `producer` names the brokers and the properties (the dead-letter
    // producer's). Throws KafkaConfigError for a bad property.
    // Relays `group`'s rows at the pace and retention `outbox` sets, on connections
    // to `postgres`; the sections outlive the relay.
    OutboxRelay(const OutboxConfig& outbox, const PostgresConfig& postgres, std::string group,
                PipelineStats& stats, Failpoints& failpoints, ProducerOptions producer);
    OutboxRelay(const OutboxRelay&) = delete;
    OutboxRelay& operator=(const OutboxRelay&) = delete;
    ~OutboxRelay();

    void start();
    void stop();

    // Rung by whoever commits outbox rows in this process (the workers), so the
    // relay publishes them at once. Lives as long as the relay.
    OutboxDoorbell& doorbell() { return doorbell_; }

    // One round on `connection` (not in a transaction). Returns the rows
    // claimed. A row Kafka does not take (produce() refuses it, or its delivery
    // report is an error, or none came within the flush) fails its unit alone:
    // the unit is parked in exo_outbox_units with its own backoff, logged, and
    // counted, the acknowledged rows are marked, and the round returns
    // normally. Throws pqxx errors (nothing is marked then).
    std::size_t relay_once(pqxx::connection& connection);

private:
    void run(std::stop_token stop);
    // Sleeps up to `timeout`, returning early on a ring, a NOTIFY or a stop.
    void await_wake(pqxx::connection& connection, std::chrono::milliseconds timeout,
                    const std::stop_token& stop);
    void update_backlog_when_due(pqxx::connection& connection);
    void log_failures(const std::vector<OutboxRow>& rows,
                      const std::vector<OutboxUnitFailure>& failures,
                      const std::vector<ParkedUnit>& parked) const;

    const OutboxConfig& outbox_;
    const PostgresConfig& postgres_;
    const std::string group_;
    PipelineStats& stats_;
    Failpoints& failpoints_;
    std::mutex reports_mutex_;
    std::vector<rd_kafka_resp_err_t> reports_;  // per row of the round; guarded
    std::uint64_t round_ = 0;                   // the round reports_ is for; guarded
    std::chrono::steady_clock::time_point next_backlog_{};
    OutboxUnit cursor_;  // the last unit claimed: the next round starts after it
    std::mutex mutex_;
    std::condition_variable_any wake_;
    OutboxDoorbell doorbell_;
    // Destroyed before the report slots it writes to (declared after them).
    std::unique_ptr<KafkaProducer> producer_;
    std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace exo
