#pragma once
// Where PostgreSQL's time goes, per record (exo_bench --pg-costs): what one scenario's run made
// PostgreSQL do, from two snapshots of the server's cumulative counters taken around the run
// (pg_cost_probe.hpp takes them), turned into figures per record, medians over the runs, and
// the report's text and Markdown. Pure: no I/O but the stream it writes to.
//
// The counters are cumulative for the whole server (WAL, pg_stat_statements) or per table:
// scenarios run one after another, so everything between the two snapshots is the scenario's,
// autovacuum and checkpoints included.
#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace exo::bench {

// One table's cumulative counters (pg_stat_user_tables) and sizes.
struct TableCounters {
    double inserted = 0, updated = 0, hot_updated = 0, deleted = 0;
    int indexes = 0;          // pg_index rows of the table
    int partial_indexes = 0;  // of which partial (an entry only for rows matching the predicate)
    double heap_bytes = 0;    // pg_relation_size
    double index_bytes = 0;   // pg_indexes_size
};

// One statement's cumulative pg_stat_statements counters (entries of the same text summed).
struct StatementCounters {
    double calls = 0, total_exec_ms = 0, rows = 0, wal_bytes = 0, wal_fpi = 0, wal_records = 0;
};

// The server's counters at one moment.
struct PgCounters {
    double wal_insert_lsn = 0;  // pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')
    // pg_stat_wal (PostgreSQL 14+): flushed by each backend at most once a second and when it
    // exits, so a snapshot may miss what a live backend has not reported yet.
    double wal_records = 0, wal_fpi = 0, wal_bytes = 0, wal_buffers_full = 0, wal_write = 0,
           wal_sync = 0;
    // Milliseconds writing and syncing WAL: 0 unless track_wal_io_timing is on.
    double wal_write_ms = 0, wal_sync_ms = 0;
    double checkpoints = 0;  // pg_stat_bgwriter checkpoints_timed + checkpoints_req
    // Key: the table's name, schema-qualified when it is not in the scenario's schema.
    std::map<std::string, TableCounters> tables;
    // Key: the statement's normalized text (pg_stat_statements), "[nested] " first for a
    // statement run inside a function. Empty when pg_stat_statements is not loaded.
    std::map<std::string, StatementCounters> statements;
    bool statements_available = false;
};

// One table's share of a run, per record.
struct TableCost {
    std::string name;
    double inserted = 0, updated = 0, hot_updated = 0, deleted = 0;  // rows per record
    int indexes = 0, partial_indexes = 0;
    // (inserted + non-HOT updated) x indexes: every index gets an entry for an inserted row
    // and for each new row version of a non-HOT update. An upper bound when some indexes
    // are partial.
    double index_entries = 0;
    double heap_bytes = 0, index_bytes = 0;  // growth per record
};

// One statement's share of a run.
struct StatementCost {
    std::string query;          // normalized text, whitespace collapsed
    double calls_per_1000 = 0;  // per 1,000 records
    double mean_us = 0;         // execution time per call
    double rows_per_call = 0;   // rows returned or affected
    double wal_bytes_per_call = 0;
    double wal_bytes_per_record = 0;
    double fpi_per_1000_calls = 0;
    double total_ms = 0;
    double time_share = 0;  // of all statements' execution time in the run, 0..1
};

// What one run (or the median over runs) cost PostgreSQL, per record.
struct PgCosts {
    std::size_t records = 0;
    double wal_bytes_lsn = 0;  // the insert LSN's advance per record: every WAL byte written
    double wal_records = 0, wal_fpi = 0, wal_bytes = 0;  // pg_stat_wal, per record
    double wal_syncs_per_1000 = 0, wal_writes_per_1000 = 0, wal_buffers_full_per_1000 = 0;
    double wal_sync_ms_per_1000 = 0, wal_write_ms_per_1000 = 0;  // track_wal_io_timing
    double checkpoints = 0;  // during the run (each makes the next change of every page an FPI)
    double postgres_cpu_ms_per_1000 = 0;    // NaN: not measured
    double statement_ms_per_1000 = 0;       // all statements' execution time per 1,000 records
    std::vector<TableCost> tables;          // tables the run changed, most rows written first
    std::vector<StatementCost> statements;  // every statement of the run, most time first
    bool statements_available = false;
};

// The run's costs from the counters before and after it. A table or statement absent from
// `before` counts from zero; tables and statements the run did not touch are left out.
// `postgres_cpu_s`: the postgres processes' CPU seconds over the run (NaN: not measured).
PgCosts pg_costs_between(const PgCounters& before, const PgCounters& after, std::size_t records,
                         double postgres_cpu_s);

// Each figure's median over the runs; a table or statement counts in the runs that have it.
// An empty list gives an empty PgCosts.
PgCosts median_pg_costs(const std::vector<PgCosts>& runs);

// The scenario's lines: WAL, CPU, the tables, the top `top` statements by time.
void print_pg_costs(std::ostream& out, const std::string& scenario, const PgCosts& costs,
                    std::size_t runs, std::size_t top = 10);

// The Markdown table "PostgreSQL per record: <left> vs <right>", for docs/performance.md:
// WAL, CPU, the rows each table takes per record and the top statements of each side.
void print_pg_costs_comparison(std::ostream& out, const std::string& left_name, const PgCosts& left,
                               const std::string& right_name, const PgCosts& right,
                               std::size_t top = 8);

// `sql` on one line (runs of whitespace as one space), cut to `width` characters with "...".
std::string shorten_query(const std::string& sql, std::size_t width);

}  // namespace exo::bench
