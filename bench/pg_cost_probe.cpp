#include "pg_cost_probe.hpp"

#include <fmt/format.h>

#include <iostream>
#include <thread>

namespace exo::bench {
namespace {

double as_double(const pqxx::field& f) {
    return f.is_null() ? 0.0 : f.as<double>();
}

}  // namespace

PgCostProbe::PgCostProbe(const std::string& uri, std::string schema)
    : connection_(uri), schema_(std::move(schema)) {
    pqxx::nontransaction tx(connection_);
    const bool preloaded =
        tx.exec("SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements'")[0][0]
            .as<bool>();
    if (!preloaded) return;
    tx.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    auto where = tx.exec(
        "SELECT quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = "
        "e.extnamespace WHERE e.extname = 'pg_stat_statements'");
    if (!where.empty()) statements_view_ = where[0][0].as<std::string>() + ".pg_stat_statements";
}

int PgCostProbe::client_sessions() {
    pqxx::nontransaction tx(connection_);
    return tx
        .exec(std::string(kBenchStatementMark) +
              " SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND "
              "pid <> pg_backend_pid()")[0][0]
        .as<int>();
}

bool PgCostProbe::wait_for_sessions(int sessions, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    bool gone = false;
    while (!(gone = client_sessions() <= sessions) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // A backend leaves pg_stat_activity and reports its statistics in its exit hooks, in
    // an order PostgreSQL does not promise: a moment for the last ones.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return gone;
}

PgCounters PgCostProbe::snapshot() {
    PgCounters c;
    pqxx::nontransaction tx(connection_);
    const std::string mark = kBenchStatementMark;
    {
        auto row = tx.exec(mark +
                           " SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8, "
                           "w.wal_records::float8, w.wal_fpi::float8, w.wal_bytes::float8, "
                           "w.wal_buffers_full::float8, w.wal_write::float8, w.wal_sync::float8, "
                           "w.wal_write_time, w.wal_sync_time, "
                           "(b.checkpoints_timed + b.checkpoints_req)::float8 "
                           "FROM pg_stat_wal w, pg_stat_bgwriter b")[0];
        c.wal_insert_lsn = as_double(row[0]);
        c.wal_records = as_double(row[1]);
        c.wal_fpi = as_double(row[2]);
        c.wal_bytes = as_double(row[3]);
        c.wal_buffers_full = as_double(row[4]);
        c.wal_write = as_double(row[5]);
        c.wal_sync = as_double(row[6]);
        c.wal_write_ms = as_double(row[7]);
        c.wal_sync_ms = as_double(row[8]);
        c.checkpoints = as_double(row[9]);
    }
    for (const auto& row :
         tx.exec(mark + " SELECT CASE WHEN t.schemaname = " + tx.quote(schema_) +
                 " THEN t.relname ELSE t.schemaname || '.' || t.relname END, "
                 "t.n_tup_ins::float8, t.n_tup_upd::float8, t.n_tup_hot_upd::float8, "
                 "t.n_tup_del::float8, "
                 "(SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid)::int, "
                 "(SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid AND i.indpred IS NOT "
                 "NULL)::int, pg_relation_size(t.relid)::float8, pg_indexes_size(t.relid)::float8 "
                 "FROM pg_stat_user_tables t")) {
        TableCounters t;
        t.inserted = as_double(row[1]);
        t.updated = as_double(row[2]);
        t.hot_updated = as_double(row[3]);
        t.deleted = as_double(row[4]);
        t.indexes = row[5].as<int>();
        t.partial_indexes = row[6].as<int>();
        t.heap_bytes = as_double(row[7]);
        t.index_bytes = as_double(row[8]);
        c.tables[row[0].as<std::string>()] = t;
    }
    if (statements_view_) {
        c.statements_available = true;
        // This database's statements, the benchmark's own left out (they carry the mark).
        for (const auto& row : tx.exec(
                 mark +
                 " SELECT toplevel, query, calls::float8, total_exec_time, rows::float8, "
                 "wal_bytes::float8, wal_fpi::float8, wal_records::float8 FROM " +
                 *statements_view_ +
                 " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                 "AND query IS NOT NULL AND strpos(query, " +
                 tx.quote(mark) + ") = 0")) {
            auto& s =
                c.statements[(row[0].as<bool>() ? "" : "[nested] ") + row[1].as<std::string>()];
            s.calls += as_double(row[2]);
            s.total_exec_ms += as_double(row[3]);
            s.rows += as_double(row[4]);
            s.wal_bytes += as_double(row[5]);
            s.wal_fpi += as_double(row[6]);
            s.wal_records += as_double(row[7]);
        }
    }
    return c;
}

PgCostWindow::PgCostWindow(bool enabled, const std::string& uri, const std::string& schema) {
    if (!enabled) return;
    try {
        probe_.emplace(uri, schema);
        sessions_before_ = probe_->client_sessions();
    } catch (const std::exception& e) {
        fail(e);
    }
}

void PgCostWindow::start() {
    if (!probe_) return;
    try {
        before_ = probe_->snapshot();
    } catch (const std::exception& e) {
        fail(e);
    }
}

std::optional<PgCosts> PgCostWindow::finish(std::size_t records, double postgres_cpu_s) {
    if (!probe_ || !before_) return std::nullopt;
    try {
        if (!probe_->wait_for_sessions(sessions_before_, std::chrono::seconds(10)))
            std::cerr << "[bench] --pg-costs: the scenario's PostgreSQL sessions were still "
                         "there after 10 s; their last statistics may be missing\n";
        return pg_costs_between(*before_, probe_->snapshot(), records, postgres_cpu_s);
    } catch (const std::exception& e) {
        fail(e);
        return std::nullopt;
    }
}

void PgCostWindow::fail(const std::exception& e) {
    std::cerr << "[bench] --pg-costs: not measured for this run: " << e.what() << "\n";
    probe_.reset();
}

}  // namespace exo::bench
