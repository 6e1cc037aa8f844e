#pragma once
// Reads PostgreSQL's cumulative counters for pg_costs.hpp (exo_bench --pg-costs): the WAL
// insert position, pg_stat_wal, pg_stat_bgwriter's checkpoints, pg_stat_user_tables with each
// table's indexes and sizes, and pg_stat_statements when the server preloads it.
//
// Lifecycle: one probe per scenario run, opened before the run's clock starts (its connection
// is not the scenario's); snapshot() at the start and, once the scenario's sessions are gone
// (wait_for_sessions: a backend reports its table and WAL statistics when it exits, at the
// latest), at the end. Not thread-safe: the main thread's.
#include <chrono>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "pg_costs.hpp"

namespace exo::bench {

// Put in the text of the benchmark's own statements: pg_stat_statements entries holding it
// are left out of the report.
inline constexpr const char* kBenchStatementMark = "/* exo_bench */";

class PgCostProbe {
public:
    // Connects to `uri` (a URI without a pinned search_path) and, when the server preloads
    // pg_stat_statements, creates the extension if it is missing. `schema`: the scenario's,
    // whose tables are named without it. Throws pqxx::failure when PostgreSQL cannot be used.
    PgCostProbe(const std::string& uri, std::string schema);

    // Client sessions connected to the server now, the probe's own not counted.
    int client_sessions();
    // Waits until at most `sessions` client sessions are connected (the probe's not counted),
    // or `limit` passed; then a moment for the last ones' statistics. Returns false on timeout.
    bool wait_for_sessions(int sessions, std::chrono::milliseconds limit);
    // The counters now. Throws pqxx::failure.
    PgCounters snapshot();

private:
    pqxx::connection connection_;
    std::string schema_;
    std::optional<std::string> statements_view_;  // schema-qualified; empty: not loaded
};

// `run` with a probe around it when `enabled`: what a scenario calls. A probe that fails
// (PostgreSQL unreachable, a view missing) prints a warning and measures nothing: the
// benchmark goes on as without --pg-costs.
class PgCostWindow {
public:
    PgCostWindow(bool enabled, const std::string& uri, const std::string& schema);
    // At the run's first record.
    void start();
    // Once the scenario stopped: waits for its sessions to go, then the costs over the window
    // (nullopt when disabled or failed). `postgres_cpu_s`: NaN when not measured.
    std::optional<PgCosts> finish(std::size_t records, double postgres_cpu_s);

private:
    void fail(const std::exception& e);
    std::optional<PgCostProbe> probe_;
    int sessions_before_ = 0;
    std::optional<PgCounters> before_;
};

}  // namespace exo::bench
