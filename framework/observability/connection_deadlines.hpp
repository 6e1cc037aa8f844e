#pragma once
// A deadline for each connection of the observability endpoint, from its accept to its close.
//
// Why: libmicrohttpd's MHD_OPTION_CONNECTION_TIMEOUT counts inactivity, so a client trickling
// one header byte a second is never idle and would hold its connection slot until its header
// bytes reach the per-connection memory limit (hours). Each connection serves one request
// (every answer says "Connection: close"), so a deadline on the connection is one on the
// request. Past it, the watchdog shuts the socket down (shutdown(2), never close(2): the
// descriptor stays MHD's); MHD then sees the end of the stream and closes the connection.
//
// Thread-safety: opened() and closed() are called on MHD's thread, shut_overdue() on the
// watchdog's; all take the one mutex. closed() is called before MHD closes the descriptor
// (libmicrohttpd calls MHD_CONNECTION_NOTIFY_CLOSED first), so a shutdown never reaches a
// descriptor that was closed and reused by someone else.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>

namespace exo {

class ConnectionDeadlines {
public:
    using Clock = std::chrono::steady_clock;

    // Starts the watchdog, which looks every `period`.
    ConnectionDeadlines(std::chrono::milliseconds limit, std::chrono::milliseconds period);
    ConnectionDeadlines(const ConnectionDeadlines&) = delete;
    ConnectionDeadlines& operator=(const ConnectionDeadlines&) = delete;
    ~ConnectionDeadlines() = default;  // the watchdog (last member) stops and joins first

    // `connection` identifies it (MHD's pointer); `fd` is its socket. Does not throw but
    // std::bad_alloc.
    void opened(const void* connection, int fd);
    void closed(const void* connection) noexcept;

    // Shuts down the sockets of the connections opened more than `limit` before `now`,
    // each once; returns how many it shut down now. The watchdog calls it with the clock.
    std::size_t shut_overdue(Clock::time_point now) noexcept;
    std::size_t open_connections() const;

private:
    struct Entry {
        int fd;
        Clock::time_point deadline;
        bool shut = false;
    };

    const std::chrono::milliseconds limit_;
    mutable std::mutex mutex_;
    std::unordered_map<const void*, Entry> open_;  // guarded by mutex_
    std::jthread watchdog_;                        // last: it uses the members above
};

}  // namespace exo
