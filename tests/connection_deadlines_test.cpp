#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "observability/connection_deadlines.hpp"

using namespace std::chrono_literals;
using exo::ConnectionDeadlines;

namespace {

// A connected pair of sockets: [0] plays the endpoint's side, [1] the client's.
struct Pair {
    Pair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0); }
    ~Pair() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
    // What the client sees now: 0 the end of the stream, -1 nothing yet.
    ssize_t client_reads() {
        char c;
        return ::recv(fd[1], &c, 1, MSG_DONTWAIT);
    }
    int fd[2];
};

}  // namespace

TEST_CASE("a connection past its deadline is shut down once, and the client sees its end") {
    ConnectionDeadlines deadlines(5s, 1h);  // the watchdog never looks during the test
    Pair p;
    int key = 0;
    const auto opened_at = ConnectionDeadlines::Clock::now();
    deadlines.opened(&key, p.fd[0]);
    CHECK(deadlines.shut_overdue(opened_at + 4s) == 0);
    CHECK(p.client_reads() == -1);
    CHECK(deadlines.shut_overdue(opened_at + 6s) == 1);
    CHECK(p.client_reads() == 0);
    CHECK(deadlines.shut_overdue(opened_at + 7s) == 0);  // once
    CHECK(deadlines.open_connections() == 1);            // until MHD says it closed
    deadlines.closed(&key);
    CHECK(deadlines.open_connections() == 0);
}

TEST_CASE("a closed connection's descriptor is never shut down, whatever its deadline") {
    ConnectionDeadlines deadlines(5s, 1h);
    Pair p;
    int key = 0;
    deadlines.opened(&key, p.fd[0]);
    deadlines.closed(&key);
    CHECK(deadlines.shut_overdue(ConnectionDeadlines::Clock::now() + 1h) == 0);
    CHECK(p.client_reads() == -1);
}

TEST_CASE("the watchdog shuts down an overdue connection by itself") {
    ConnectionDeadlines deadlines(0ms, 10ms);
    Pair p;
    int key = 0;
    deadlines.opened(&key, p.fd[0]);
    // Generous: the watchdog looks every 10 ms; a loaded machine may delay it.
    bool ended = false;
    for (int i = 0; i < 1000 && !ended; ++i) {
        ended = p.client_reads() == 0;
        if (!ended) ::usleep(10'000);
    }
    CHECK(ended);
    deadlines.closed(&key);
}
