// The observability endpoint under hostile clients (issue 31): a real `exo run` child process
// attacked over loopback. The attackers connect from 127.0.0.2, the probes from 127.0.0.1, as an
// attacker on the network and an orchestrator's probe would: /healthz must answer every probe
// in under a second, the daemon's memory must stay within a few MB of where it started, and
// its descriptors must stay the pipeline's.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "observability_support.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::ChildProcess;
using exo::testing::ClientSocket;
using exo::testing::eventually;
using exo::testing::free_port;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::status_of;
using exo::testing::write_config;

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kAttacker = "127.0.0.2";
constexpr const char* kProbe = "127.0.0.1";

// The process's resident memory, in KiB (VmRSS of /proc/PID/status); -1 if unreadable.
long rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

std::string request(const std::string& method, const std::string& path,
                    const std::string& extra_headers = "") {
    return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers +
           "Connection: close\r\n\r\n";
}

// One GET of /healthz from the probe's address: its status (0: none) and how long it took,
// connect included.
struct Probe {
    int status = 0;
    Clock::duration took{};
};
Probe probe(int port) {
    const auto start = Clock::now();
    ClientSocket c(kProbe, port, 3s);
    Probe p;
    if (c.ok() && c.send(request("GET", "/healthz"))) p.status = status_of(c.receive_all());
    p.took = Clock::now() - start;
    return p;
}

// Probes until `done` says stop (at least once); returns a description of each probe that did
// not answer 200 within a second, empty when all did.
std::string probe_while(int port, const std::function<bool()>& done, int* probes) {
    std::ostringstream failures;
    do {
        const Probe p = probe(port);
        ++*probes;
        if (p.status != 200 || p.took >= 1s)
            failures << "probe " << *probes << ": status " << p.status << " after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(p.took).count()
                     << " ms\n";
        std::this_thread::sleep_for(200ms);
    } while (!done());
    return failures.str();
}

// A daemon with the endpoint on a port of its own, once it is ready.
struct ServedDaemon {
    explicit ServedDaemon(const std::string& name, std::vector<std::string> prefix = {})
        : h({.name = name, .partitions = 1}), port(free_port()) {
        h.produce({payment("warm-1", "acc-1", 10, 1, 0)});
        log = "/tmp/" + h.schema() + "-" + name + ".log";
        std::vector<std::string> args = std::move(prefix);
        std::string program = exo::testing::exo_binary();
        if (!args.empty()) {
            args.push_back(program);
            program = args.front();
            args.erase(args.begin());
        }
        for (auto a : {"run", "--config"}) args.emplace_back(a);
        args.push_back(write_config(h, port, name));
        daemon.emplace(program, args, std::map<std::string, std::string>{}, log);
    }
    void wait_ready() {
        REQUIRE(h.wait_until_consumed(60s));
        REQUIRE(eventually([&] { return probe(port).status == 200; }, 30000ms));
    }
    std::string log_text() const {
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    PipelineHarness h;
    int port;
    std::string log;
    std::optional<ChildProcess> daemon;
};

// Sends `head`, then `chunk` `repeats` times, from the attacker's address, until done or the
// server stops taking bytes. Returns the bytes it sent.
std::size_t stream_attack(int port, const std::string& head, const std::string& chunk,
                          std::size_t repeats) {
    ClientSocket c(kAttacker, port, 5s);
    if (!c.ok() || !c.send(head)) return 0;
    std::size_t sent = head.size();
    for (std::size_t i = 0; i < repeats && c.send(chunk); ++i) sent += chunk.size();
    return sent;
}

constexpr std::size_t k200MB = std::size_t{200} * 1024 * 1024;
const std::string kBlock(64 * 1024, 'a');

// Runs the attack while probing /healthz, then probes again; checks every probe answered 200
// within a second and the daemon's RSS never grew more than 8 MB over its start (cpp-httplib
// 0.11 grew it by 80-150 MB on each of these).
void check_attack(ServedDaemon& d, const std::function<std::size_t()>& attack) {
    d.wait_ready();
    const pid_t pid = d.daemon->pid();
    const long before = rss_kib(pid);
    REQUIRE(before > 0);
    std::atomic<bool> finished{false};
    std::atomic<long> peak{before};
    std::size_t sent = 0;
    std::thread attacker([&] {
        sent = attack();
        finished = true;
    });
    std::thread sampler([&] {
        while (!finished) {
            peak = std::max(peak.load(), rss_kib(pid));
            std::this_thread::sleep_for(50ms);
        }
    });
    int probes = 0;
    std::string failures = probe_while(
        d.port, [&] { return finished.load(); }, &probes);
    attacker.join();
    sampler.join();
    failures += probe_while(
        d.port, [] { return true; }, &probes);
    const long after = rss_kib(pid);
    CHECK_MESSAGE(failures.empty(), "/healthz during and after the attack:\n" << failures);
    CHECK_MESSAGE(peak - before < 8 * 1024, "RSS " << before << " KiB before, peak " << peak.load()
                                                   << " KiB, " << sent << " bytes sent");
    CHECK_MESSAGE(after - before < 8 * 1024,
                  "RSS " << before << " KiB before, " << after << " KiB after");
}

}  // namespace

TEST_CASE(
    "the endpoint answers GET and HEAD, refuses any other method with 405 before reading its "
    "body, and answers 404 for an unknown path") {
    ServedDaemon d("obs_methods");
    d.wait_ready();
    {
        ClientSocket c(kProbe, d.port, 10s);
        REQUIRE(c.ok());
        REQUIRE(c.send(request("HEAD", "/healthz")));
        const std::string answer = c.receive_all();
        CHECK(status_of(answer) == 200);
        CHECK(answer.find("\r\n\r\n") == answer.size() - 4);  // no body
    }
    {
        // A body announced and never sent: the answer comes without waiting for it.
        ClientSocket c(kProbe, d.port, 10s);
        REQUIRE(c.ok());
        REQUIRE(c.send(request("POST", "/metrics", "Content-Length: 1000000\r\n")));
        const auto start = Clock::now();
        const std::string answer = c.receive_all();
        CHECK(status_of(answer) == 405);
        CHECK(answer.find("Allow: GET, HEAD") != std::string::npos);
        CHECK(Clock::now() - start < 5s);
    }
    {
        ClientSocket c(kProbe, d.port, 10s);
        REQUIRE(c.ok());
        REQUIRE(c.send(request("GET", "/nothing-here")));
        CHECK(status_of(c.receive_all()) == 404);
    }
}

TEST_CASE(
    "a 200 MB POST body to /metrics costs the daemon no memory and /healthz answers within a "
    "second during and after it") {
    ServedDaemon d("obs_post_body");
    check_attack(d, [&] {
        return stream_attack(
            d.port,
            request("POST", "/metrics", "Content-Length: " + std::to_string(k200MB) + "\r\n"),
            kBlock, k200MB / kBlock.size());
    });
}

TEST_CASE(
    "a 200 MB chunked body costs the daemon no memory and /healthz answers within a second "
    "during and after it") {
    ServedDaemon d("obs_chunked");
    std::ostringstream size;
    size << std::hex << kBlock.size();
    check_attack(d, [&] {
        return stream_attack(d.port, request("POST", "/metrics", "Transfer-Encoding: chunked\r\n"),
                             size.str() + "\r\n" + kBlock + "\r\n", k200MB / kBlock.size());
    });
}

TEST_CASE(
    "a GET with a million header lines costs the daemon no memory and /healthz answers within "
    "a second during and after it") {
    ServedDaemon d("obs_headers");
    std::string lines;
    for (int i = 0; i < 4096; ++i) lines += "X-Attack: 0123456789\r\n";  // 22 bytes each
    check_attack(d, [&] {
        return stream_attack(d.port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n", lines,
                             1'000'000 / 4096 + 1);
    });
}

TEST_CASE(
    "a 200 MB request line without a newline costs the daemon no memory and /healthz answers "
    "within a second during and after it") {
    ServedDaemon d("obs_request_line");
    check_attack(d, [&] { return stream_attack(d.port, "GET /", kBlock, k200MB / kBlock.size()); });
}

TEST_CASE(
    "32 connections trickling a header byte a second leave /healthz answering within a "
    "second in every probe, and a trickling connection is ended at its deadline") {
    ServedDaemon d("obs_trickle");
    d.wait_ready();
    std::atomic<bool> stop{false};
    std::vector<std::thread> tricklers;
    for (int i = 0; i < 32; ++i)
        tricklers.emplace_back([&] {
            // A persistent attacker: a connection the server closes is opened again.
            while (!stop) {
                ClientSocket c(kAttacker, d.port, 2s);
                if (c.ok() && c.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "))
                    while (!stop && c.send("a")) std::this_thread::sleep_for(1s);
                std::this_thread::sleep_for(100ms);
            }
        });
    // One more, from an address of its own: the server ends it at its deadline (5 s from its
    // accept) although it never stops sending.
    std::atomic<long long> cut_after_ms{-1};
    std::thread watched([&] {
        const auto start = Clock::now();
        ClientSocket c("127.0.0.3", d.port, 2s);
        if (!c.ok() || !c.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")) return;
        while (!stop && c.send("a")) std::this_thread::sleep_for(1s);
        if (!stop)
            cut_after_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    });
    // Long enough for the tricklers to outlive the endpoint's per-connection deadline and
    // come back.
    const auto until = Clock::now() + 15s;
    int probes = 0;
    const std::string failures = probe_while(
        d.port, [&] { return Clock::now() >= until; }, &probes);
    stop = true;
    for (auto& t : tricklers) t.join();
    watched.join();
    CHECK_MESSAGE(failures.empty(), probes << " probes of /healthz:\n" << failures);
    // Ended after the 5 s deadline; 15 s leaves a loaded machine its slack.
    CHECK(cut_after_ms.load() >= 4000);
    CHECK(cut_after_ms.load() < 15000);
    CHECK(probe(d.port).status == 200);
}

TEST_CASE(
    "400 idle connections to a daemon limited to 256 descriptors leave /healthz answering and "
    "the pipeline applying records, with no descriptor exhausted") {
    ServedDaemon d("obs_idle", {"/usr/bin/prlimit", "--nofile=256:256"});
    // The connections are opened as soon as the endpoint listens, while the daemon is still
    // connecting to PostgreSQL, Redis and Kafka.
    REQUIRE(eventually([&] { return ClientSocket(kProbe, d.port, 1s).ok(); }, 30000ms));
    std::vector<ClientSocket> idle;
    for (int i = 0; i < 400; ++i) idle.emplace_back(kAttacker, d.port, 1s);
    d.h.produce(
        {payment("idle-1", "acc-idle-1", 10, 1, 0), payment("idle-2", "acc-idle-2", 20, 1, 0)});
    // The three records (the warm-up one and these two) are applied while they stay open.
    CHECK(d.h.wait_until_consumed(60s));
    CHECK(d.h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 3);
    int probes = 0;
    const auto until = Clock::now() + 3s;
    const std::string failures = probe_while(
        d.port, [&] { return Clock::now() >= until; }, &probes);
    CHECK_MESSAGE(failures.empty(), probes << " probes of /healthz:\n" << failures);
    CHECK(d.log_text().find("Too many open files") == std::string::npos);
    idle.clear();
    d.daemon->signal(SIGTERM);
    const auto exited = d.daemon->wait(30s);
    REQUIRE(exited.has_value());
    CHECK(WIFEXITED(*exited));
    CHECK(WEXITSTATUS(*exited) == 0);
}
