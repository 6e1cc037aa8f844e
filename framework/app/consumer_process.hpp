#pragma once
// What `exo run` runs, put together in one place: the process's counters, the
// daemon (the poll loop, the lane scheduler and the batch runners) and, beside
// it, the retention pruner and the outbox relay (when outbox.enabled), each on
// its own thread and PostgreSQL session. The daemon knows the relay only by its
// doorbell and the pruner not at all.
//
// Lifecycle: construct -> run(stop) (starts the pruner and the relay, runs the
// daemon until `stop` and its drain, then stops them; rethrows the daemon's fatal
// error after stopping them) -> destroy. Thread-safety: run() on one thread;
// daemon()'s observers from any thread (runtime/daemon.hpp).
#include <memory>
#include <stop_token>
#include <string>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "metrics/pipeline_stats.hpp"
#include "outbox/outbox_relay.hpp"
#include "protocol/handler_registry.hpp"
#include "retention/retention_pruner.hpp"
#include "runtime/daemon.hpp"

namespace exo {

class ConsumerProcess {
public:
    // Every reference outlives the process. `bootstrap_servers` is the resolved
    // address. Throws KafkaConfigError for bad librdkafka properties.
    ConsumerProcess(const Config& config, const HandlerRegistry& handlers, Failpoints& failpoints,
                    std::string bootstrap_servers);
    ConsumerProcess(const ConsumerProcess&) = delete;
    ConsumerProcess& operator=(const ConsumerProcess&) = delete;

    void run(std::stop_token stop);

    Daemon& daemon() { return daemon_; }
    const Daemon& daemon() const { return daemon_; }

private:
    // Declaration order is destruction order reversed: the daemon (whose runners
    // ring the relay's doorbell and count into stats_) goes before the relay.
    PipelineStats stats_;
    RetentionPruner pruner_;
    std::unique_ptr<OutboxRelay> relay_;  // null when outbox.enabled is false
    Daemon daemon_;
};

}  // namespace exo
