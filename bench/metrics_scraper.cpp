#include "metrics_scraper.hpp"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace exo::bench {

MetricsScraper::MetricsScraper(int port)
    : thread_([this, port](std::stop_token stop) {
          httplib::Client client("127.0.0.1", port);
          while (!stop.stop_requested()) {
              if (auto res = client.Get("/metrics"); res && res->status == 200) scrapes_++;
              for (int i = 0; i < 10 && !stop.stop_requested(); ++i)
                  std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
      }) {}

MetricsScraper::~MetricsScraper() {
    thread_.request_stop();
}

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    ::close(fd);
    if (!ok) throw std::runtime_error("no free local port");
    return ntohs(addr.sin_port);
}

}  // namespace exo::bench
