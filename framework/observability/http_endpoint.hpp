#pragma once
// The observability endpoint (observability.listen): /metrics, /healthz, /readyz and /status
// over HTTP/1.1 (libmicrohttpd), on a thread of its own.
//
// Anyone who reaches the address can ask (the image listens on every interface, without
// authentication), so the server bounds what a client can cost (http_endpoint.cpp, kLimits):
// request line and headers share a few KiB per connection, no body is ever read (anything but
// GET and HEAD is answered 405 as soon as its headers are in), each connection serves one
// request within a deadline, and connections are capped per client address and in all, so
// /healthz answers while clients misbehave and the pipeline keeps its descriptors.
//
// Lifecycle: the constructor binds (so a port in use fails `exo run` at once, with the
// address and the reason in the message) and starts serving; attach() points it at the
// daemon once that exists, detach() before the daemon goes; the destructor stops the server
// and joins. While detached (starting, or stopping) /healthz answers 200 (alive: a restart
// would wait for the same thing), /readyz 503 naming the wait, both with a "phase", and
// /metrics only exo_build_info and exo_ready 0.
// Thread-safety: attach/detach from the composition root's thread; requests are served on
// the endpoint's thread, which reads only ObservedDaemon::status() and the stats' atomics.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "observability/observed_daemon.hpp"

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
    // What the probes answer while no daemon is attached (default: connecting to
    // PostgreSQL), e.g. which Kafka topics start-up waits for.
    void starting(std::string reason);

private:
    struct Server;  // the libmicrohttpd daemon and what its callbacks use (http_endpoint.cpp)
    struct Reply {
        unsigned status = 200;
        std::string body;
        std::string_view content_type;
    };
    // What a GET of `path` answers now (404 for an unknown path). Called on the server's
    // thread; thread-safe.
    Reply reply(std::string_view path) const;

    std::chrono::milliseconds bound_;
    mutable std::mutex mutex_;
    const ObservedDaemon* daemon_ = nullptr;  // guarded by mutex_
    std::string starting_ =
        "starting: connecting to PostgreSQL and checking its schema";  // guarded by mutex_
    std::unique_ptr<Server> server_;  // last: its thread calls reply()
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
