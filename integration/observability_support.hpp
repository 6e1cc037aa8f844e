#pragma once
// What the observability tests share: a free port, a daemon config that listens on it, a GET
// and a metric's sum, and a
// raw HTTP/1.1 client over a plain socket (from a chosen local address, with timeouts) for
// requests no well-behaved client library sends.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "pipeline_harness.hpp"

namespace exo::testing {

// A port nobody listens on right now (the kernel's choice for port 0).
inline int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    ::close(fd);
    return ntohs(addr.sin_port);
}

// The harness's config with observability.listen on 127.0.0.1:port, written to a file.
inline std::string write_config(const PipelineHarness& h, int port, const std::string& name) {
    std::string path = "/tmp/" + h.schema() + "-" + name + ".yaml";
    std::ofstream(path) << h.config_yaml() << "observability:\n  listen: \"127.0.0.1:" << port
                        << "\"\n";
    return path;
}

// An HTTP answer: its status (0: no answer) and body.
struct Got {
    int status = 0;
    std::string body;
};

// GET 127.0.0.1:port/path with short timeouts (2 s to connect, 5 s to read).
inline Got get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(2);
    client.set_read_timeout(5);
    auto res = client.Get(path);
    if (!res) return {};
    return {res->status, res->body};
}

// The sum of a family's samples whose labels contain `labels` (e.g.
// outcome="applied"), from exposition text; -1 when there is none.
inline double metric_sum(const std::string& text, const std::string& family,
                         const std::string& labels) {
    std::istringstream in(text);
    double sum = -1;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(family + "{", 0) != 0 && line.rfind(family + " ", 0) != 0) continue;
        if (line.find(labels) == std::string::npos) continue;
        sum = (sum < 0 ? 0 : sum) + std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
}

// A connected TCP socket, closed with this object.
class ClientSocket {
public:
    // Connects from `source` (an address of this host: 127.0.0.2 is another client than
    // 127.0.0.1 to the server) to 127.0.0.1:port. `timeout` bounds the connect and each send
    // and receive. !ok() when it could not connect.
    ClientSocket(const char* source, int port, std::chrono::milliseconds timeout) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) return;
        timeval tv{static_cast<time_t>(timeout.count() / 1000),
                   static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_in from{};
        from.sin_family = AF_INET;
        ::inet_pton(AF_INET, source, &from.sin_addr);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(static_cast<std::uint16_t>(port));
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
            ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ClientSocket(ClientSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    ClientSocket& operator=(ClientSocket&&) = delete;
    ClientSocket(const ClientSocket&) = delete;
    ClientSocket& operator=(const ClientSocket&) = delete;
    ~ClientSocket() {
        if (fd_ >= 0) ::close(fd_);
    }

    bool ok() const { return fd_ >= 0; }
    // Sends all of `bytes`; false when the server closed, reset or stopped reading (timeout).
    bool send(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0) return false;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }
    // Everything the server sends until it closes (or the receive timeout).
    std::string receive_all() {
        std::string out;
        char buf[4096];
        for (ssize_t n; (n = ::recv(fd_, buf, sizeof buf, 0)) > 0;)
            out.append(buf, static_cast<std::size_t>(n));
        return out;
    }

private:
    int fd_ = -1;
};

// The status code of an HTTP answer's status line; 0 for none.
inline int status_of(const std::string& answer) {
    if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12) return 0;
    return std::stoi(answer.substr(9, 3));
}

}  // namespace exo::testing
