#include "pg_costs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

namespace exo::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string number(double v, int decimals) {
    if (std::isnan(v)) return "n/a";
    return fmt::format("{:.{}f}", v, decimals);
}

// A counter's advance; a counter that went backwards (the statistics were reset, or a
// statement's entry was evicted and re-created) counts from zero.
double advance(double before, double after) {
    return after >= before ? after - before : after;
}

// The median of the values (the mean of the middle two for an even count); NaN when none.
// Its own rather than measure.hpp's, so the unit tests need none of the benchmark's I/O.
double median(std::vector<double> v) {
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const std::size_t mid = v.size() / 2;
    return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

double ratio(double a, double b) {
    return b == 0 ? kNaN : a / b;
}

// The median over the runs of one figure of an element found by `find` (absent: skipped).
template <typename Item, typename Find>
double median_over(const std::vector<PgCosts>& runs, Find find, double Item::*field) {
    std::vector<double> v;
    for (const auto& r : runs)
        if (const Item* item = find(r); item != nullptr && !std::isnan(item->*field))
            v.push_back(item->*field);
    return median(std::move(v));
}

double median_field(const std::vector<PgCosts>& runs, double PgCosts::*field) {
    std::vector<double> v;
    for (const auto& r : runs)
        if (!std::isnan(r.*field)) v.push_back(r.*field);
    return median(std::move(v));
}

double rows_written(const TableCost& t) {
    return t.inserted + t.updated + t.deleted;
}

struct Totals {
    double inserted = 0, updated = 0, hot_updated = 0, deleted = 0, index_entries = 0,
           heap_bytes = 0, index_bytes = 0;
};

Totals totals(const PgCosts& c) {
    Totals t;
    for (const auto& table : c.tables) {
        t.inserted += table.inserted;
        t.updated += table.updated;
        t.hot_updated += table.hot_updated;
        t.deleted += table.deleted;
        t.index_entries += table.index_entries;
        t.heap_bytes += table.heap_bytes;
        t.index_bytes += table.index_bytes;
    }
    return t;
}

const TableCost* find_table(const PgCosts& c, const std::string& name) {
    for (const auto& t : c.tables)
        if (t.name == name) return &t;
    return nullptr;
}

// "1.00 ins, 0.90 upd (0.85 HOT), 2 idx: 1.10 entries" for a Markdown cell; "-" if absent.
std::string table_cell(const TableCost* t) {
    if (t == nullptr) return "-";
    std::string s;
    auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
    if (t->inserted > 0) add(number(t->inserted, 2) + " ins");
    if (t->updated > 0)
        add(fmt::format("{} upd ({} HOT)", number(t->updated, 2), number(t->hot_updated, 2)));
    if (t->deleted > 0) add(number(t->deleted, 2) + " del");
    if (s.empty()) s = "0";
    return fmt::format(
        "{}; {} idx{}: {} entries", s, t->indexes,
        t->partial_indexes > 0 ? fmt::format(" ({} partial)", t->partial_indexes) : "",
        number(t->index_entries, 2));
}

}  // namespace

std::string shorten_query(const std::string& sql, std::size_t width) {
    std::string out;
    bool space = false;
    for (char c : sql) {
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    if (out.size() > width) out = out.substr(0, width >= 3 ? width - 3 : 0) + "...";
    return out;
}

PgCosts pg_costs_between(const PgCounters& before, const PgCounters& after, std::size_t records,
                         double postgres_cpu_s) {
    PgCosts c;
    c.records = records;
    const double n = records == 0 ? kNaN : static_cast<double>(records);
    auto per_record = [n](double b, double a) { return advance(b, a) / n; };
    c.wal_bytes_lsn = per_record(before.wal_insert_lsn, after.wal_insert_lsn);
    c.wal_records = per_record(before.wal_records, after.wal_records);
    c.wal_fpi = per_record(before.wal_fpi, after.wal_fpi);
    c.wal_bytes = per_record(before.wal_bytes, after.wal_bytes);
    c.wal_syncs_per_1000 = per_record(before.wal_sync, after.wal_sync) * 1000;
    c.wal_writes_per_1000 = per_record(before.wal_write, after.wal_write) * 1000;
    c.wal_buffers_full_per_1000 =
        per_record(before.wal_buffers_full, after.wal_buffers_full) * 1000;
    c.wal_sync_ms_per_1000 = per_record(before.wal_sync_ms, after.wal_sync_ms) * 1000;
    c.wal_write_ms_per_1000 = per_record(before.wal_write_ms, after.wal_write_ms) * 1000;
    c.checkpoints = advance(before.checkpoints, after.checkpoints);
    c.postgres_cpu_ms_per_1000 = postgres_cpu_s * 1e6 / n;

    for (const auto& [name, a] : after.tables) {
        auto it = before.tables.find(name);
        const TableCounters b = it == before.tables.end() ? TableCounters{} : it->second;
        TableCost t;
        t.name = name;
        t.inserted = per_record(b.inserted, a.inserted);
        t.updated = per_record(b.updated, a.updated);
        t.hot_updated = per_record(b.hot_updated, a.hot_updated);
        t.deleted = per_record(b.deleted, a.deleted);
        t.indexes = a.indexes;
        t.partial_indexes = a.partial_indexes;
        t.index_entries = (t.inserted + t.updated - t.hot_updated) * a.indexes;
        // Sizes may shrink (a truncate): growth is signed, not a counter.
        t.heap_bytes = (a.heap_bytes - b.heap_bytes) / n;
        t.index_bytes = (a.index_bytes - b.index_bytes) / n;
        if (rows_written(t) > 0) c.tables.push_back(t);
    }
    std::stable_sort(c.tables.begin(), c.tables.end(), [](const auto& x, const auto& y) {
        return rows_written(x) > rows_written(y);
    });

    c.statements_available = before.statements_available && after.statements_available;
    double total_ms = 0;
    for (const auto& [query, a] : after.statements) {
        auto it = before.statements.find(query);
        const StatementCounters b =
            it == before.statements.end() ? StatementCounters{} : it->second;
        const double calls = advance(b.calls, a.calls);
        if (calls <= 0) continue;
        StatementCost s;
        s.query = shorten_query(query, std::numeric_limits<std::size_t>::max());
        s.calls_per_1000 = calls / n * 1000;
        s.total_ms = advance(b.total_exec_ms, a.total_exec_ms);
        s.mean_us = s.total_ms * 1000 / calls;
        s.rows_per_call = advance(b.rows, a.rows) / calls;
        const double wal = advance(b.wal_bytes, a.wal_bytes);
        s.wal_bytes_per_call = wal / calls;
        s.wal_bytes_per_record = wal / n;
        s.fpi_per_1000_calls = advance(b.wal_fpi, a.wal_fpi) / calls * 1000;
        total_ms += s.total_ms;
        c.statements.push_back(s);
    }
    for (auto& s : c.statements) s.time_share = total_ms > 0 ? s.total_ms / total_ms : 0;
    c.statement_ms_per_1000 = total_ms / n * 1000;
    std::stable_sort(c.statements.begin(), c.statements.end(),
                     [](const auto& x, const auto& y) { return x.total_ms > y.total_ms; });
    return c;
}

PgCosts median_pg_costs(const std::vector<PgCosts>& runs) {
    PgCosts m;
    if (runs.empty()) return m;
    m.records = runs.front().records;
    for (auto field :
         {&PgCosts::wal_bytes_lsn, &PgCosts::wal_records, &PgCosts::wal_fpi, &PgCosts::wal_bytes,
          &PgCosts::wal_syncs_per_1000, &PgCosts::wal_writes_per_1000,
          &PgCosts::wal_buffers_full_per_1000, &PgCosts::wal_sync_ms_per_1000,
          &PgCosts::wal_write_ms_per_1000, &PgCosts::checkpoints,
          &PgCosts::postgres_cpu_ms_per_1000, &PgCosts::statement_ms_per_1000})
        m.*field = median_field(runs, field);

    // Tables and statements in the order of the run that had them first; sorted again below.
    std::vector<std::string> names, queries;
    std::set<std::string> seen_names, seen_queries;
    for (const auto& r : runs) {
        m.statements_available = m.statements_available || r.statements_available;
        for (const auto& t : r.tables)
            if (seen_names.insert(t.name).second) names.push_back(t.name);
        for (const auto& s : r.statements)
            if (seen_queries.insert(s.query).second) queries.push_back(s.query);
    }
    for (const auto& name : names) {
        auto find = [&name](const PgCosts& c) { return find_table(c, name); };
        TableCost t;
        t.name = name;
        for (const auto& r : runs)
            if (const auto* x = find(r)) {
                t.indexes = x->indexes;
                t.partial_indexes = x->partial_indexes;
            }
        for (auto field : {&TableCost::inserted, &TableCost::updated, &TableCost::hot_updated,
                           &TableCost::deleted, &TableCost::index_entries, &TableCost::heap_bytes,
                           &TableCost::index_bytes})
            t.*field = median_over<TableCost>(runs, find, field);
        m.tables.push_back(t);
    }
    std::stable_sort(m.tables.begin(), m.tables.end(), [](const auto& x, const auto& y) {
        return rows_written(x) > rows_written(y);
    });
    for (const auto& query : queries) {
        auto find = [&query](const PgCosts& c) -> const StatementCost* {
            for (const auto& s : c.statements)
                if (s.query == query) return &s;
            return nullptr;
        };
        StatementCost s;
        s.query = query;
        for (auto field : {&StatementCost::calls_per_1000, &StatementCost::mean_us,
                           &StatementCost::rows_per_call, &StatementCost::wal_bytes_per_call,
                           &StatementCost::wal_bytes_per_record, &StatementCost::fpi_per_1000_calls,
                           &StatementCost::total_ms, &StatementCost::time_share})
            s.*field = median_over<StatementCost>(runs, find, field);
        m.statements.push_back(s);
    }
    std::stable_sort(m.statements.begin(), m.statements.end(),
                     [](const auto& x, const auto& y) { return x.total_ms > y.total_ms; });
    return m;
}

void print_pg_costs(std::ostream& out, const std::string& scenario, const PgCosts& c,
                    std::size_t runs, std::size_t top) {
    out << fmt::format("\n--- {}: PostgreSQL per record ({}) ---\n", scenario,
                       runs == 1 ? std::string("one run") : fmt::format("median of {} runs", runs));
    out << fmt::format(
        "WAL {} B/record (insert LSN); pg_stat_wal {} records, {} full-page images, {} B per "
        "record; {} syncs ({} ms), {} writes ({} ms), {} buffers full per 1,000 records; {} "
        "checkpoints\n",
        number(c.wal_bytes_lsn, 0), number(c.wal_records, 2), number(c.wal_fpi, 3),
        number(c.wal_bytes, 0), number(c.wal_syncs_per_1000, 1), number(c.wal_sync_ms_per_1000, 1),
        number(c.wal_writes_per_1000, 1), number(c.wal_write_ms_per_1000, 1),
        number(c.wal_buffers_full_per_1000, 1), number(c.checkpoints, 0));
    out << fmt::format("CPU postgres {} ms per 1,000 records; statements' execution {}\n",
                       number(c.postgres_cpu_ms_per_1000, 1),
                       c.statements_available
                           ? number(c.statement_ms_per_1000, 1) + " ms per 1,000 records"
                           : std::string("n/a"));
    out << fmt::format("{:<32} {:>8} {:>8} {:>8} {:>8} {:>4} {:>12} {:>10} {:>10}\n", "table",
                       "ins/rec", "upd/rec", "HOT/rec", "del/rec", "idx", "idx entr/rec",
                       "heap B/rec", "idx B/rec");
    for (const auto& t : c.tables)
        out << fmt::format(
            "{:<32} {:>8} {:>8} {:>8} {:>8} {:>4} {:>12} {:>10} {:>10}\n", t.name,
            number(t.inserted, 3), number(t.updated, 3), number(t.hot_updated, 3),
            number(t.deleted, 3), fmt::format("{}{}", t.indexes, t.partial_indexes > 0 ? "*" : ""),
            number(t.index_entries, 2), number(t.heap_bytes, 0), number(t.index_bytes, 0));
    const Totals sum = totals(c);
    out << fmt::format("{:<32} {:>8} {:>8} {:>8} {:>8} {:>4} {:>12} {:>10} {:>10}\n", "(all)",
                       number(sum.inserted, 3), number(sum.updated, 3), number(sum.hot_updated, 3),
                       number(sum.deleted, 3), "", number(sum.index_entries, 2),
                       number(sum.heap_bytes, 0), number(sum.index_bytes, 0));
    if (!c.statements_available) {
        out << "statements: n/a (pg_stat_statements is not loaded: scripts/bench.sh --pg-costs "
               "preloads it)\n";
        return;
    }
    out << fmt::format("{:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>6}  {}\n", "calls/1k", "mean us",
                       "rows/call", "WAL B/call", "WAL B/rec", "FPI/1kcal", "time%",
                       fmt::format("statement (top {} of {} by time)",
                                   std::min(top, c.statements.size()), c.statements.size()));
    for (std::size_t i = 0; i < c.statements.size() && i < top; ++i) {
        const auto& s = c.statements[i];
        out << fmt::format("{:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>6}  {}\n",
                           number(s.calls_per_1000, 1), number(s.mean_us, 0),
                           number(s.rows_per_call, 1), number(s.wal_bytes_per_call, 0),
                           number(s.wal_bytes_per_record, 1), number(s.fpi_per_1000_calls, 1),
                           number(s.time_share * 100, 1), shorten_query(s.query, 100));
    }
    if (c.statements.size() > top) {
        double wal = 0;
        for (std::size_t i = top; i < c.statements.size(); ++i)
            wal += c.statements[i].wal_bytes_per_record;
        out << fmt::format("(the other {} statements: {} WAL B/rec)\n", c.statements.size() - top,
                           number(wal, 1));
    }
}

void print_pg_costs_comparison(std::ostream& out, const std::string& left_name, const PgCosts& left,
                               const std::string& right_name, const PgCosts& right,
                               std::size_t top) {
    out << fmt::format("\n=== PostgreSQL per record: {} vs {} (Markdown) ===\n\n", left_name,
                       right_name);
    out << fmt::format("| per record | {} | {} | {} / {} |\n| --- | --- | --- | --- |\n", left_name,
                       right_name, left_name, right_name);
    auto row = [&](const std::string& what, double l, double r, int decimals) {
        out << fmt::format("| {} | {} | {} | {} |\n", what, number(l, decimals),
                           number(r, decimals), number(ratio(l, r), 2));
    };
    row("WAL bytes (insert LSN advance)", left.wal_bytes_lsn, right.wal_bytes_lsn, 0);
    row("WAL records", left.wal_records, right.wal_records, 2);
    row("WAL full-page images", left.wal_fpi, right.wal_fpi, 3);
    row("WAL syncs per 1,000 records", left.wal_syncs_per_1000, right.wal_syncs_per_1000, 1);
    row("WAL sync ms per 1,000 records (track_wal_io_timing)", left.wal_sync_ms_per_1000,
        right.wal_sync_ms_per_1000, 1);
    row("PostgreSQL CPU ms per 1,000 records", left.postgres_cpu_ms_per_1000,
        right.postgres_cpu_ms_per_1000, 1);
    if (left.statements_available && right.statements_available)
        row("statements' execution ms per 1,000 records", left.statement_ms_per_1000,
            right.statement_ms_per_1000, 1);
    const Totals l = totals(left), r = totals(right);
    row("rows inserted (all tables)", l.inserted, r.inserted, 2);
    row("rows updated (all tables)", l.updated, r.updated, 2);
    row("of which HOT", l.hot_updated, r.hot_updated, 2);
    row("rows deleted (all tables)", l.deleted, r.deleted, 2);
    row("index entries written (estimate)", l.index_entries, r.index_entries, 2);
    row("heap + index growth, bytes", l.heap_bytes + l.index_bytes, r.heap_bytes + r.index_bytes,
        0);
    // The tables, both sides' union, most rows written first (on either side).
    std::vector<std::pair<double, std::string>> names;
    std::set<std::string> seen;
    for (const auto* side : {&left, &right})
        for (const auto& t : side->tables)
            if (seen.insert(t.name).second) {
                const auto* a = find_table(left, t.name);
                const auto* b = find_table(right, t.name);
                names.emplace_back(std::max(a ? rows_written(*a) : 0.0, b ? rows_written(*b) : 0.0),
                                   t.name);
            }
    std::stable_sort(names.begin(), names.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    for (const auto& [rows, name] : names)
        out << fmt::format("| table `{}` | {} | {} | |\n", name, table_cell(find_table(left, name)),
                           table_cell(find_table(right, name)));

    if (!left.statements_available || !right.statements_available) {
        out << "\n(statements: n/a, pg_stat_statements is not loaded)\n";
        return;
    }
    out << fmt::format(
        "\n| statement (top {} by time per side) | side | calls per 1,000 records | mean µs | "
        "rows per call | WAL bytes per record | share of statement time |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n",
        top);
    for (const auto& [name, side] : {std::pair{&left_name, &left}, std::pair{&right_name, &right}})
        for (std::size_t i = 0; i < side->statements.size() && i < top; ++i) {
            const auto& s = side->statements[i];
            std::string q = shorten_query(s.query, 110);
            std::replace(q.begin(), q.end(), '|', '/');
            out << fmt::format("| `{}` | {} | {} | {} | {} | {} | {}% |\n", q, *name,
                               number(s.calls_per_1000, 1), number(s.mean_us, 0),
                               number(s.rows_per_call, 1), number(s.wal_bytes_per_record, 1),
                               number(s.time_share * 100, 1));
        }
    out << "\n(per record of the workload, duplicates included; medians over the runs. WAL "
           "bytes: the insert LSN's advance from the first record to the scenario's PostgreSQL "
           "sessions gone, autovacuum and checkpoints included. Index entries: (inserted + "
           "non-HOT updated rows) x the table's indexes, an upper bound for partial indexes. "
           "Statements: pg_stat_statements.)\n\n";
}

}  // namespace exo::bench
