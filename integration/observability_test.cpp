// The observability endpoint of a real `exo run` child process, checked by the
// real tools: promtool validates the exposition text, a real Prometheus server
// scrapes the daemon and answers the applied count through its HTTP API, and
// the probes answer what the daemon does.
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <regex>
#include <thread>

#include "child_process.hpp"
#include "observability_support.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::ChildProcess;
using exo::testing::eventually;
using exo::testing::free_port;
using exo::testing::get;
using exo::testing::metric_sum;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::write_config;

namespace {

std::string run_and_capture(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    const int status = ::pclose(pipe);
    REQUIRE_MESSAGE(status == 0, command << " failed:\n" << out);
    return out;
}

}  // namespace

TEST_CASE(
    "a running daemon's /metrics passes promtool, a real Prometheus scrapes its applied count, "
    "and /healthz, /readyz and /status answer what it does") {
    PipelineHarness h({.name = "obs_metrics", .partitions = 2});
    h.produce({payment("m-1", "acc-1", 10, 1, 0), payment("m-2", "acc-1", 20, 2, 0),
               payment("m-1", "acc-1", 10, 1, 1), payment("m-3", "acc-2", 5, 1, 1)});
    const int port = free_port();
    const std::string config = write_config(h, port, "metrics");
    ChildProcess daemon(exo::testing::exo_binary(), {"run", "--config", config}, {},
                        "/tmp/" + h.schema() + "-metrics.log");
    REQUIRE(h.wait_until_consumed(60s));
    const auto applied = h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'");
    REQUIRE(applied == 3);

    std::string text;
    REQUIRE_MESSAGE(eventually(
                        [&] {
                            text = get(port, "/metrics").body;
                            return metric_sum(text, "exo_records_total", "outcome=\"applied\"") ==
                                   3.0;
                        },
                        30000ms),
                    "last scrape:\n"
                        << text);
    CHECK(metric_sum(text, "exo_records_total", "outcome=\"duplicate_") == 1.0);
    CHECK(metric_sum(text, "exo_partitions_assigned", "") == 2.0);
    CHECK(metric_sum(text, "exo_dependency_up", "dependency=\"postgres\"") == 1.0);
    CHECK(metric_sum(text, "exo_handler_duration_seconds_count", "topic=") == 3.0);
    // librdkafka's statistics (every 5 s) reach the gauge: both partitions, nothing behind.
    CHECK_MESSAGE(eventually(
                      [&] {
                          text = get(port, "/metrics").body;
                          return metric_sum(text, "exo_consumer_lag", "partition=\"0\"") == 0 &&
                                 metric_sum(text, "exo_consumer_lag", "partition=\"1\"") == 0;
                      },
                      30000ms),
                  "last scrape:\n"
                      << text);

    // promtool (Debian's prometheus package) is the judge of the format.
    const std::string scraped = "/tmp/" + h.schema() + "-metrics.prom";
    std::ofstream(scraped) << text;
    run_and_capture("promtool check metrics < " + scraped + " 2>&1");

    CHECK(eventually([&] { return get(port, "/readyz").status == 200; }, 30000ms));
    CHECK(get(port, "/healthz").status == 200);
    auto status = nlohmann::json::parse(get(port, "/status").body);
    CHECK(status["ready"]["ok"] == true);
    REQUIRE(status["partitions"].size() == 2);
    for (const auto& p : status["partitions"]) {
        CHECK(p["topic"] == h.topic());
        CHECK(p["in_flight"] == 0);
    }
    // Offsets are committed on an interval: the status shows them once they are.
    CHECK(eventually(
        [&] {
            auto s = nlohmann::json::parse(get(port, "/status").body);
            long long committed = 0;
            for (const auto& p : s["partitions"])
                if (!p["committed"].is_null()) committed += p["committed"].get<long long>();
            return committed == 4;  // two records in each partition
        },
        30000ms));

    // A real Prometheus server scraping the daemon every second.
    const int prometheus_port = free_port();
    const auto dir = std::filesystem::path("/tmp") / (h.schema() + "-prometheus");
    std::filesystem::create_directories(dir / "data");
    std::ofstream(dir / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: exo\n"
        << "    static_configs:\n      - targets: ['127.0.0.1:" << port << "']\n";
    ChildProcess prometheus("/usr/bin/prometheus",
                            {"--config.file=" + (dir / "prometheus.yml").string(),
                             "--storage.tsdb.path=" + (dir / "data").string(),
                             "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)},
                            {}, (dir / "prometheus.log").string());
    std::string answer;
    CHECK_MESSAGE(eventually(
                      [&] {
                          answer = get(prometheus_port,
                                       "/api/v1/query?query=sum(exo_records_total%7Boutcome%3D%"
                                       "22applied%22%7D)")
                                       .body;
                          if (answer.empty()) return false;
                          auto j = nlohmann::json::parse(answer, nullptr, false);
                          if (j.is_discarded() || j["status"] != "success") return false;
                          const auto& result = j["data"]["result"];
                          return result.size() == 1 && result[0]["value"][1] == "3";
                      },
                      60000ms),
                  "Prometheus answered: " << answer);
    prometheus.signal(SIGTERM);
    prometheus.wait(20s);
    std::filesystem::remove_all(dir);

    daemon.signal(SIGTERM);
    auto exited = daemon.wait(30s);
    REQUIRE(exited.has_value());
    CHECK(WIFEXITED(*exited));
}

TEST_CASE(
    "a spare member with no partition is ready, so it does not block a rolling deploy, and "
    "the partition's owner is ready too") {
    PipelineHarness h({.name = "obs_spare", .partitions = 1});
    h.produce({payment("s-1", "acc-1", 10, 1, 0)});
    const int first_port = free_port();
    const int second_port = free_port();
    ChildProcess first(exo::testing::exo_binary(),
                       {"run", "--config", write_config(h, first_port, "first")}, {},
                       "/tmp/" + h.schema() + "-first.log");
    ChildProcess second(exo::testing::exo_binary(),
                        {"run", "--config", write_config(h, second_port, "second")}, {},
                        "/tmp/" + h.schema() + "-second.log");
    REQUIRE(h.wait_until_consumed(60s));
    auto assigned = [](int port) {
        auto s = nlohmann::json::parse(get(port, "/status").body, nullptr, false);
        return s.is_discarded() ? -1 : static_cast<int>(s["partitions"].size());
    };
    // One of them owns the partition, the other none; both are ready.
    CHECK(eventually([&] { return assigned(first_port) + assigned(second_port) == 1; }, 30000ms));
    CHECK(eventually(
        [&] {
            return get(first_port, "/readyz").status == 200 &&
                   get(second_port, "/readyz").status == 200;
        },
        30000ms));
    first.signal(SIGTERM);
    second.signal(SIGTERM);
    CHECK(first.wait(30s).has_value());
    CHECK(second.wait(30s).has_value());
}

TEST_CASE("an endpoint address already in use fails `exo run` at once, naming the key (exit 2)") {
    PipelineHarness h({.name = "obs_in_use", .partitions = 1});
    // Another process's listening socket on the port.
    int occupant = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(occupant >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(occupant, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(occupant, 1) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(occupant, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const int port = ntohs(addr.sin_port);
    auto finished = exo::testing::run_to_end(exo::testing::exo_binary(),
                                             {"run", "--config", write_config(h, port, "in-use")},
                                             {}, "/tmp/" + h.schema() + "-in-use.log", 30s);
    REQUIRE(finished.has_value());
    CHECK(finished->exit_code == 2);
    CHECK(finished->output.find("observability.listen: cannot listen on 127.0.0.1:" +
                                std::to_string(port)) != std::string::npos);
    ::close(occupant);
}

TEST_CASE(
    "while it waits at start-up for PostgreSQL the daemon is live (a restart would wait "
    "for the same thing) and not ready, both naming the wait") {
    PipelineHarness h({.name = "obs_starting", .partitions = 1});
    // Nothing listens on this port: `exo run` retries PostgreSQL until it answers.
    const std::string dead = "postgresql://exo@127.0.0.1:" + std::to_string(free_port()) + "/exo";
    std::string yaml = h.config_yaml();
    const auto at = yaml.find(h.postgres_uri());
    REQUIRE(at != std::string::npos);
    yaml.replace(at, h.postgres_uri().size(), dead);
    const int port = free_port();
    const std::string config = "/tmp/" + h.schema() + "-starting.yaml";
    std::ofstream(config) << yaml << "observability:\n  listen: \"127.0.0.1:" << port << "\"\n";
    ChildProcess daemon(exo::testing::exo_binary(), {"run", "--config", config}, {},
                        "/tmp/" + h.schema() + "-starting.log");
    exo::testing::Got ready;
    REQUIRE(eventually(
        [&] {
            ready = get(port, "/readyz");
            return ready.status == 503;
        },
        30000ms));
    CHECK(ready.body.find("PostgreSQL") != std::string::npos);
    // Still waiting a few retries later, and live all along.
    for (int i = 0; i < 3; ++i) {
        std::this_thread::sleep_for(500ms);
        const auto live = get(port, "/healthz");
        CHECK(live.status == 200);
        CHECK(live.body.find("PostgreSQL") != std::string::npos);  // the phase it is in
        CHECK(get(port, "/readyz").status == 503);
    }
}
