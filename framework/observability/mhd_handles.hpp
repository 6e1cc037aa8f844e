#pragma once
// Thin owners of libmicrohttpd's handles, one deleter each (as kafka/rdkafka_handles.hpp does
// for librdkafka), and of the endpoint's listening socket until MHD takes it.
#include <microhttpd.h>
#include <unistd.h>

#include <memory>
#include <utility>

namespace exo::mhd {

struct DaemonDeleter {
    // Stops MHD's thread, closes every connection (each gets its CLOSED notification first)
    // and the listening socket.
    void operator()(MHD_Daemon* d) const noexcept { MHD_stop_daemon(d); }
};
using DaemonHandle = std::unique_ptr<MHD_Daemon, DaemonDeleter>;

struct ResponseDeleter {
    // Drops our reference: a queued response lives on in MHD until it is sent.
    void operator()(MHD_Response* r) const noexcept { MHD_destroy_response(r); }
};
using ResponseHandle = std::unique_ptr<MHD_Response, ResponseDeleter>;

// A socket descriptor, closed unless released to its next owner.
class Socket {
public:
    explicit Socket(int fd) noexcept : fd_(fd) {}
    Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Socket& operator=(Socket&&) = delete;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    ~Socket() {
        if (fd_ >= 0) ::close(fd_);
    }

    int get() const noexcept { return fd_; }
    // The hand-off to MHD (MHD_OPTION_LISTEN_SOCKET): from here MHD closes it, also when
    // MHD_start_daemon fails after reading its options.
    int release_to_mhd() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_;
};

}  // namespace exo::mhd
