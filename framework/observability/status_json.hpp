#pragma once
// /status: the daemon's state as JSON, for operators and scripts
// (`curl -s host:port/status | jq`). Pure.
#include <string>

#include "observability/daemon_status.hpp"
#include "observability/health.hpp"

namespace exo {

// {"live":{"ok":..,"reason":..},"ready":{..},"joined":..,"dependencies":{"redis":..,
//  "postgres":..,"kafka":..},"workers":[{"index","healthy","busy_ms"}] (one per batch
//  runner, healthy the same for all: the pipeline's),
//  "partitions":[{"topic","partition","paused","stalled","committed","queued",
//  "in_flight","parked","parked_bytes","lag"}]}; committed, lag and busy_ms are null when unknown;
//  "redis" is left out with claim.store: postgres (no Redis to be up or down).
std::string status_json(const DaemonStatus& status, const HealthVerdict& live,
                        const HealthVerdict& ready, DaemonStatus::Clock::time_point now);

}  // namespace exo
