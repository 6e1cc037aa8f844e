#include "inbox_peer_scenario.hpp"

#include <sys/resource.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "paced_producer.hpp"
#include "pg_cost_probe.hpp"

namespace exo::bench {
namespace {

// Where inbox_peer.js lives: EXO_INBOX_PEER_DIR if set, else the source tree's copy.
std::string peer_dir() {
    const char* dir = std::getenv("EXO_INBOX_PEER_DIR");
    return dir != nullptr && *dir != '\0' ? dir : EXO_INBOX_PEER_SOURCE_DIR;
}

// Single-quoted for /bin/sh.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

struct PipeCloser {
    void operator()(FILE* f) const { ::pclose(f); }
};

double cpu_seconds(const rusage& u) {
    auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

ScenarioResult run_inbox_peer(BenchWorld& world, const Isolation& iso, const TopicWorkload& w,
                              const BenchOptions& options, const ServerProcesses& servers,
                              const std::string& name, double paced_rate, double warm_up_seconds) {
    ScenarioResult r;
    r.name = name;
    r.records = w.size();
    const bool paced = paced_rate > 0;
    // The environment goes on the command line, not through setenv(): other threads of
    // this process (librdkafka's) may read the environment at any time.
    std::string command = fmt::format(
        "PEER_BROKERS={} PEER_TOPIC={} PEER_GROUP={} PEER_PG_URI={} PEER_SCHEMA={} "
        "PEER_EXPECT={} timeout {} node {}/inbox_peer.js",
        quoted(world.bootstrap()), quoted(w.topic), quoted(iso.group), quoted(options.postgres_uri),
        quoted(iso.schema), w.size(), options.timeout.count(), quoted(peer_dir()));
    // Before the peer starts: its sessions are the ones waited for at the end.
    PgCostWindow pg_window(options.pg_costs, options.postgres_uri, iso.schema);
    std::unique_ptr<FILE, PipeCloser> pipe(::popen(command.c_str(), "r"));
    if (!pipe) {
        r.failure = "could not start the peer: " + command;
        return r;
    }
    // Its lines: {"ready":true} once the group is joined, then the result.
    std::string line, result;
    std::array<char, 4096> chunk{};
    PacedSend sent;
    CpuSnapshot cpu_start, cpu_end;
    rusage children_start{};
    while (std::fgets(chunk.data(), chunk.size(), pipe.get()) != nullptr) {
        line += chunk.data();
        if (line.empty() || line.back() != '\n') continue;
        if (line.find("\"ready\"") != std::string::npos) {
            cpu_start = cpu_snapshot({}, servers);
            ::getrusage(RUSAGE_CHILDREN, &children_start);
            pg_window.start();
            if (paced) {
                r.offered_rate = paced_rate;
                sent = produce_paced(world.bootstrap(), w, paced_rate);
                r.produced_rate = sent.achieved_rate;
            }
        } else {
            // The result comes before the peer closes its pool: its backends (and
            // their CPU time) are still there.
            if (result.empty()) cpu_end = cpu_snapshot({}, servers);
            result += line;
        }
        line.clear();
    }
    result += line;
    int status = ::pclose(pipe.release());
    // The shell, timeout and node were waited for: RUSAGE_CHILDREN now holds node's CPU.
    rusage children_end{};
    ::getrusage(RUSAGE_CHILDREN, &children_end);
    if (status != 0) {
        r.failure = fmt::format(
            "the peer exited with status {} (its stderr is above; is node installed and "
            "`npm ci` run in {}?)",
            status, peer_dir());
        return r;
    }
    if (paced && sent.sent_us.empty()) {
        r.failure = "the peer never said its group was joined: nothing was produced";
        return r;
    }
    try {
        auto j = nlohmann::json::parse(result);
        r.seconds_to_committed = j.at("seconds_to_committed").get<double>();
        r.seconds_to_finished = r.seconds_to_committed;
        r.postgres_round_trips_reported = j.at("queries").get<double>();
        r.peak_rss_kb = j.at("peak_rss_kb").get<long>();
        if (cpu_start.at != std::chrono::steady_clock::time_point{}) {
            r.cpu = cpu_between(cpu_start, cpu_end);
            r.cpu.self_by_role["node"] = cpu_seconds(children_end) - cpu_seconds(children_start);
        }
    } catch (const std::exception& e) {
        r.failure =
            fmt::format("the peer's output is not its JSON line ({}): {}", e.what(), result);
        return r;
    }
    // node exited: its pool's sessions go, reporting their last statistics.
    r.pg_costs = pg_window.finish(r.records, r.cpu.wall_s > 0 ? r.cpu.postgres_s : kNotMeasured);
    if (paced) commit_latencies(iso, w, sent, warm_up_seconds, r);
    r.failure = world.check_exactly_once(iso, w.workload, DedupTable::peer_inbox);
    return r;
}

}  // namespace exo::bench
