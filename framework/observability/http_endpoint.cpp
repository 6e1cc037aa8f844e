#include "observability/http_endpoint.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <exo/errors.hpp>
#include "observability/health.hpp"
#include "observability/metrics_text.hpp"
#include "observability/status_json.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

void answer(httplib::Response& res, const HealthVerdict& v) {
    res.status = v.ok ? 200 : 503;
    nlohmann::json body{{"ok", v.ok}};
    if (!v.ok) body["reason"] = v.reason;
    res.set_content(body.dump(), "application/json");
}

}  // namespace

ObservabilityEndpoint::ObservabilityEndpoint(const ObservabilityConfig::Listen& listen,
                                             std::chrono::milliseconds liveness_bound)
    : server_(std::make_unique<httplib::Server>()), bound_(liveness_bound) {
    auto& s = *server_;
    // Scrapes and probes are small and rare: two threads, not one per core.
    s.new_task_queue = [] { return new httplib::ThreadPool(2); };

    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        std::lock_guard lock(mutex_);
        static const PipelineStats kNothingYet;
        if (daemon_ == nullptr) {
            res.set_content(render_metrics(kNothingYet, DaemonStatus{}, false, EXO_VERSION),
                            kPrometheusTextType);
            return;
        }
        const auto status = daemon_->status();
        const bool ready = readiness(status, Clock::now(), bound_).ok;
        res.set_content(render_metrics(daemon_->stats(), status, ready, EXO_VERSION),
                        kPrometheusTextType);
    });
    auto probe = [this](bool ready_probe) {
        return [this, ready_probe](const httplib::Request&, httplib::Response& res) {
            std::lock_guard lock(mutex_);
            if (daemon_ == nullptr)
                return answer(res, {false, "starting: waiting for PostgreSQL's schema"});
            const auto status = daemon_->status();
            answer(res, ready_probe ? readiness(status, Clock::now(), bound_)
                                    : liveness(status, Clock::now(), bound_));
        };
    };
    s.Get("/healthz", probe(false));
    s.Get("/readyz", probe(true));
    s.Get("/status", [this](const httplib::Request&, httplib::Response& res) {
        std::lock_guard lock(mutex_);
        const auto status = daemon_ ? daemon_->status() : DaemonStatus{};
        const auto now = Clock::now();
        HealthVerdict live{false, "starting: waiting for PostgreSQL's schema"};
        HealthVerdict ready = live;
        if (daemon_) {
            live = liveness(status, now, bound_);
            ready = readiness(status, now, bound_);
        }
        res.set_content(status_json(status, live, ready, now), "application/json");
    });

    if (!s.bind_to_port(listen.host, listen.port))
        throw UsageError("observability.listen: cannot listen on " + listen.host + ":" +
                         std::to_string(listen.port) +
                         " (port in use, or not an address of this host): choose another "
                         "address, or remove observability.listen to run without the endpoint");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    spdlog::info("observability endpoint on http://{}:{} (/metrics /healthz /readyz /status)",
                 listen.host.find(':') == std::string::npos ? listen.host : "[" + listen.host + "]",
                 listen.port);
}

ObservabilityEndpoint::~ObservabilityEndpoint() {
    detach();
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

void ObservabilityEndpoint::attach(const ObservedDaemon& daemon) {
    std::lock_guard lock(mutex_);
    daemon_ = &daemon;
}

void ObservabilityEndpoint::detach() {
    std::lock_guard lock(mutex_);
    daemon_ = nullptr;
}

}  // namespace exo
