#pragma once
// What the benchmark reads about itself and the machine: medians and
// percentiles, memory (getrusage and /proc/self/status), and CPU time per
// process and per thread (from /proc), so a scenario can say where the CPU went.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace exo::bench {

double median(std::vector<double> values);  // NaN for an empty list
// Nearest-rank percentile (p in [0, 100]) of an unsorted list; NaN when empty.
double percentile(std::vector<double> values, double p);

struct MemoryReading {
    long max_rss_kb = 0;      // getrusage(RUSAGE_SELF).ru_maxrss: the process's peak, never reset
    long vm_hwm_kb = 0;       // /proc/self/status VmHWM: peak since the last reset_peak_rss()
    long vm_rss_kb = 0;       // /proc/self/status VmRSS: now
    long heap_in_use_kb = 0;  // allocated, not freed: jemalloc's stats.allocated, or glibc's
                              // mallinfo2().uordblks + hblkhd
};
MemoryReading read_memory();
// Resets VmHWM to the current RSS (writes 5 to /proc/self/clear_refs, Linux >= 4.0),
// so a scenario's own peak can be read. Returns false where that is not allowed.
// This also resets getrusage's ru_maxrss (the same kernel counter), so the peak
// seen before each reset is kept: see process_peak_rss_kb().
bool reset_peak_rss();
// Before a scenario: returns freed heap to the OS (jemalloc's purge of every arena, or
// glibc's malloc_trim), so memory freed by the previous scenario or run is not counted
// as this one's, then resets the peak. Returns what reset_peak_rss() returned.
bool begin_memory_window();
// The allocator the process runs on, for the report's header: "jemalloc (EXO_JEMALLOC)", or
// glibc's malloc with its MALLOC_ARENA_MAX.
std::string allocator_description();
// The process's peak RSS over its whole life, across reset_peak_rss() calls.
long process_peak_rss_kb();

// The server processes of this benchmark, found through the servers themselves:
// other PostgreSQL and Redis instances on the machine are not counted.
struct ServerProcesses {
    int redis_pid = 0;       // Redis INFO server process_id
    int postmaster_pid = 0;  // parent of our backend; its children are the backends
    int kafka_pid = 0;       // a real broker's JVM (--broker-pid); 0: none (the mock is in-process)
};

// CPU seconds used so far, by whom. Threads of this process are grouped by
// their name (librdkafka names its threads rdk:*); `thread_roles` maps thread
// ids to a role name for the unnamed threads we can tell apart.
struct CpuSnapshot {
    std::chrono::steady_clock::time_point at;
    double machine_busy_s = 0;  // all CPUs, from /proc/stat (user+nice+system+irq+softirq+steal)
    double machine_total_s = 0;
    double self_s = 0;                           // this process
    std::map<std::string, double> self_by_role;  // this process, per thread role
    double postgres_s = 0;                       // every process named postgres
    double redis_s = 0;                          // every process named redis-server
    double kafka_s = 0;                          // the real broker's process, if known
};
// Backends that exit between two snapshots take their CPU time with them.
CpuSnapshot cpu_snapshot(const std::map<int, std::string>& thread_roles,
                         const ServerProcesses& servers);

struct CpuUsage {
    double wall_s = 0;
    double machine_busy_share = 0;  // of all cores, 0..1
    int cores = 1;
    double self_s = 0, postgres_s = 0, redis_s = 0, kafka_s = 0;
    std::map<std::string, double> self_by_role;
};
CpuUsage cpu_between(const CpuSnapshot& from, const CpuSnapshot& to);

int current_thread_id();  // gettid()

}  // namespace exo::bench
