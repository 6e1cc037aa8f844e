#include "measure.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

namespace exo::bench {
namespace {

// jemalloc's control interface when the process allocates with it (exo links it, EXO_JEMALLOC),
// else null: glibc's mallinfo2/malloc_trim then answer. Looked up, not linked, so the benchmark
// builds and measures either way.
using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
Mallctl jemalloc_ctl() {
    static const auto ctl = reinterpret_cast<Mallctl>(::dlsym(RTLD_DEFAULT, "mallctl"));
    return ctl;
}

long heap_in_use_kb() {
    if (const auto ctl = jemalloc_ctl()) {
        std::uint64_t epoch = 1;
        std::size_t length = sizeof epoch;
        ctl("epoch", &epoch, &length, &epoch, length);  // jemalloc's statistics are cached
        std::size_t allocated = 0;
        length = sizeof allocated;
        if (ctl("stats.allocated", &allocated, &length, nullptr, 0) != 0) return 0;
        return static_cast<long>(allocated / 1024);
    }
    const auto mi = ::mallinfo2();
    return static_cast<long>((mi.uordblks + mi.hblkhd) / 1024);
}

// Hands freed memory back to the OS now: jemalloc would otherwise return it over ~10 s (its
// decay), in the middle of the next scenario.
void release_freed_memory() {
    if (const auto ctl = jemalloc_ctl()) {
        constexpr const char* kPurgeEveryArena = "arena.4096.purge";  // MALLCTL_ARENAS_ALL
        ctl(kPurgeEveryArena, nullptr, nullptr, nullptr, 0);
        return;
    }
    ::malloc_trim(0);
}

void print_allocator_stats() {  // to stderr
    using StatsPrint = void (*)(void (*)(void*, const char*), void*, const char*);
    if (const auto print =
            reinterpret_cast<StatsPrint>(::dlsym(RTLD_DEFAULT, "malloc_stats_print")))
        print(nullptr, nullptr, nullptr);
    else
        ::malloc_stats();
}

long status_kb(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
    return 0;
}

// utime + stime of a /proc/.../stat file, in seconds, its name and parent pid.
bool read_stat(const std::string& path, std::string& comm, double& cpu_s, int* ppid = nullptr) {
    std::ifstream in(path);
    std::string text;
    if (!std::getline(in, text)) return false;
    auto open = text.find('(');
    auto close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) return false;
    comm = text.substr(open + 1, close - open - 1);
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    // Fields after the name: state(3) ppid(4) ... utime(14) stime(15), numbered from 1 = pid.
    unsigned long long utime = 0, stime = 0;
    for (int n = 3; n <= 15 && rest >> field; ++n) {
        if (n == 4 && ppid) *ppid = std::stoi(field);
        if (n == 14) utime = std::stoull(field);
        if (n == 15) stime = std::stoull(field);
    }
    cpu_s = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
    return true;
}

std::vector<std::string> numeric_entries(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.emplace_back(e->d_name);
        ::closedir(d);
    }
    return out;
}

}  // namespace

double median(std::vector<double> values) {
    return percentile(std::move(values), 50);
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(values.begin(), values.end());
    if (p == 50 && values.size() % 2 == 0)
        return (values[values.size() / 2 - 1] + values[values.size() / 2]) / 2;
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
    rank = std::clamp<std::size_t>(rank, 1, values.size());
    return values[rank - 1];
}

MemoryReading read_memory() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return {ru.ru_maxrss, status_kb("VmHWM"), status_kb("VmRSS"), heap_in_use_kb()};
}

namespace {
long peak_before_resets_kb = 0;  // main thread only, like reset_peak_rss()
}  // namespace

long process_peak_rss_kb() {
    return std::max({peak_before_resets_kb, status_kb("VmHWM"), read_memory().max_rss_kb});
}

bool reset_peak_rss() {
    peak_before_resets_kb = process_peak_rss_kb();
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

std::string allocator_description() {
    if (jemalloc_ctl() != nullptr) return "jemalloc (EXO_JEMALLOC)";
    const char* arenas = std::getenv("MALLOC_ARENA_MAX");
    return std::string("glibc malloc, MALLOC_ARENA_MAX=") + (arenas ? arenas : "unset") +
           " (when unset, glibc keeps the malloc arenas of every finished daemon's threads: the "
           "process RSS then grows from scenario to scenario while the heap in use does not)";
}

bool begin_memory_window() {
    release_freed_memory();
    if (std::getenv("EXO_BENCH_MALLOC_STATS") != nullptr) print_allocator_stats();
    return reset_peak_rss();
}

int current_thread_id() {
    return static_cast<int>(::syscall(SYS_gettid));
}

CpuSnapshot cpu_snapshot(const std::map<int, std::string>& thread_roles,
                         const ServerProcesses& servers) {
    CpuSnapshot s;
    s.at = std::chrono::steady_clock::now();
    {
        std::ifstream in("/proc/stat");
        std::string cpu;
        unsigned long long v[8] = {0};
        in >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7];
        double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
        // user nice system idle iowait irq softirq steal
        s.machine_busy_s = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick;
        s.machine_total_s = s.machine_busy_s + static_cast<double>(v[3] + v[4]) / tick;
    }
    std::string comm;
    double cpu = 0;
    for (const auto& tid : numeric_entries("/proc/self/task")) {
        if (!read_stat("/proc/self/task/" + tid + "/stat", comm, cpu)) continue;
        auto role = thread_roles.find(std::stoi(tid));
        std::string name = role != thread_roles.end() ? role->second : comm;
        // librdkafka: rdk:main, rdk:broker<N>, ... grouped by what the thread serves.
        if (name.rfind("rdk:broker", 0) == 0) name = "rdk:broker*";
        s.self_by_role[name] += cpu;
        s.self_s += cpu;
    }
    for (const auto& pid : numeric_entries("/proc")) {
        int ppid = 0;
        int id = std::stoi(pid);
        if (!read_stat("/proc/" + pid + "/stat", comm, cpu, &ppid)) continue;
        if (servers.postmaster_pid != 0 &&
            (id == servers.postmaster_pid || ppid == servers.postmaster_pid))
            s.postgres_s += cpu;
        if (id == servers.redis_pid) s.redis_s += cpu;
        if (servers.kafka_pid != 0 && id == servers.kafka_pid) s.kafka_s += cpu;
    }
    return s;
}

CpuUsage cpu_between(const CpuSnapshot& from, const CpuSnapshot& to) {
    CpuUsage u;
    u.wall_s = std::chrono::duration<double>(to.at - from.at).count();
    u.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    double total = to.machine_total_s - from.machine_total_s;
    u.machine_busy_share = total > 0 ? (to.machine_busy_s - from.machine_busy_s) / total : 0;
    u.self_s = to.self_s - from.self_s;
    u.postgres_s = to.postgres_s - from.postgres_s;
    u.redis_s = to.redis_s - from.redis_s;
    u.kafka_s = to.kafka_s - from.kafka_s;
    for (const auto& [role, s] : to.self_by_role) {
        auto before = from.self_by_role.find(role);
        double d = s - (before != from.self_by_role.end() ? before->second : 0);
        if (d > 0) u.self_by_role[role] = d;
    }
    return u;
}

}  // namespace exo::bench
