#include "observability/connection_deadlines.hpp"

#include <sys/socket.h>

namespace exo {

ConnectionDeadlines::ConnectionDeadlines(std::chrono::milliseconds limit,
                                         std::chrono::milliseconds period)
    : limit_(limit), watchdog_([this, period](std::stop_token stop) {
          std::mutex sleep_mutex;
          std::condition_variable_any wake;
          std::unique_lock lock(sleep_mutex);
          while (!stop.stop_requested()) {
              wake.wait_for(lock, stop, period, [] { return false; });
              if (!stop.stop_requested()) shut_overdue(Clock::now());
          }
      }) {}

void ConnectionDeadlines::opened(const void* connection, int fd) {
    std::lock_guard lock(mutex_);
    open_[connection] = Entry{fd, Clock::now() + limit_};
}

void ConnectionDeadlines::closed(const void* connection) noexcept {
    std::lock_guard lock(mutex_);
    open_.erase(connection);
}

std::size_t ConnectionDeadlines::shut_overdue(Clock::time_point now) noexcept {
    std::lock_guard lock(mutex_);
    std::size_t shut = 0;
    for (auto& [connection, entry] : open_) {
        if (entry.shut || now < entry.deadline) continue;
        ::shutdown(entry.fd, SHUT_RDWR);
        entry.shut = true;
        ++shut;
    }
    return shut;
}

std::size_t ConnectionDeadlines::open_connections() const {
    std::lock_guard lock(mutex_);
    return open_.size();
}

}  // namespace exo
