#pragma once
// What a Prometheus server does to a daemon, inside the benchmark: GET
// /metrics every second on its own thread, so observability=1 scenarios pay
// for rendering and serving scrapes as a production deployment does.
#include <atomic>
#include <thread>

namespace exo::bench {

class MetricsScraper {
public:
    explicit MetricsScraper(int port);
    ~MetricsScraper();  // stops and joins
    MetricsScraper(const MetricsScraper&) = delete;
    MetricsScraper& operator=(const MetricsScraper&) = delete;

    int scrapes() const { return scrapes_.load(); }

private:
    std::atomic<int> scrapes_{0};
    std::jthread thread_;
};

// A TCP port on 127.0.0.1 nobody listens on right now.
int free_port();

}  // namespace exo::bench
