#pragma once
// What the observability endpoint reads of a running daemon, and nothing more:
// its status snapshot and its counters. runtime/daemon.hpp's Daemon implements it; the
// endpoint depends on this interface, not on the runtime, so the runtime layer
// sits above observability (docs/design.md#code-layers).
//
// Thread-safety: both are called from the endpoint's threads while the daemon
// runs; status() returns a copy, stats() atomics (relaxed reads).
#include "metrics/pipeline_stats.hpp"
#include "observability/daemon_status.hpp"

namespace exo {

class ObservedDaemon {
public:
    virtual ~ObservedDaemon() = default;

    virtual const PipelineStats& stats() const = 0;
    // As of the daemon's last snapshot (a few hundred milliseconds old at most).
    virtual DaemonStatus status() const = 0;
};

}  // namespace exo
