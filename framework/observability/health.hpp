#pragma once
// The answers of /healthz and /readyz, decided from a DaemonStatus. Pure: the
// endpoint passes the time, the unit tests every case.
//
// Live (healthz): the poll loop turned, and every batch runner either waits
// for records or has worked on its batch in hand, within `bound`. A process that
// is not live should be restarted: it is stuck, and restarting loses nothing
// (the guarantee holds across kill -9).
// Ready (readyz): live, joined to its group, a Kafka broker connection up,
// the batch runners healthy (their dependencies answered, as far as the pipeline
// needs them) and no partition stalled. A member that joined and got no partitions is ready:
// spare replicas must not block a rolling deploy.
#include <chrono>
#include <string>

#include "observability/daemon_status.hpp"

namespace exo {

struct HealthVerdict {
    bool ok = false;
    std::string reason;  // why not (empty when ok)
};

HealthVerdict liveness(const DaemonStatus& status, DaemonStatus::Clock::time_point now,
                       std::chrono::milliseconds bound);
HealthVerdict readiness(const DaemonStatus& status, DaemonStatus::Clock::time_point now,
                        std::chrono::milliseconds bound);

// The liveness bound for a configuration: a revoke's drain (shutdown_timeout)
// keeps the poll loop away legitimately, and a batch may take a few leases.
std::chrono::milliseconds liveness_bound(std::chrono::milliseconds shutdown_timeout,
                                         std::chrono::milliseconds lease);

}  // namespace exo
