#pragma once
// The observability endpoint (observability.listen): /metrics, /healthz,
// /readyz and /status over HTTP/1.1 (cpp-httplib), on a thread of its own.
//
// Lifecycle: the constructor binds (so a port in use fails `exo run` at once,
// with the address in the message) and starts serving; attach() points it at
// the daemon once that exists, detach() before the daemon goes; the
// destructor stops the server and joins. While detached every probe answers
// 503 "starting" and /metrics only exo_build_info and exo_ready 0.
// Thread-safety: attach/detach from the composition root's thread; requests
// are served on the endpoint's threads, which read only ObservedDaemon::status()
// and the stats' atomics.
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "config/config.hpp"
#include "observability/observed_daemon.hpp"

namespace httplib {
class Server;
}

namespace exo {

class ObservabilityEndpoint {
public:
    // Throws UsageError when the address cannot be bound (in use, not local).
    ObservabilityEndpoint(const ObservabilityConfig::Listen& listen,
                          std::chrono::milliseconds liveness_bound);
    ObservabilityEndpoint(const ObservabilityEndpoint&) = delete;
    ObservabilityEndpoint& operator=(const ObservabilityEndpoint&) = delete;
    ~ObservabilityEndpoint();

    void attach(const ObservedDaemon& daemon);
    void detach();

private:
    std::unique_ptr<httplib::Server> server_;
    std::chrono::milliseconds bound_;
    mutable std::mutex mutex_;
    const ObservedDaemon* daemon_ = nullptr;  // guarded by mutex_
    std::thread thread_;
};

// RAII for attach/detach: the daemon is served exactly while this lives.
class AttachedDaemon {
public:
    AttachedDaemon(ObservabilityEndpoint* endpoint, const ObservedDaemon& daemon)
        : endpoint_(endpoint) {
        if (endpoint_) endpoint_->attach(daemon);
    }
    ~AttachedDaemon() {
        if (endpoint_) endpoint_->detach();
    }
    AttachedDaemon(const AttachedDaemon&) = delete;
    AttachedDaemon& operator=(const AttachedDaemon&) = delete;

private:
    ObservabilityEndpoint* endpoint_;
};

}  // namespace exo
