// exo_bench --pg-costs' arithmetic and tables: bench/pg_costs.hpp (pure; the benchmark's
// probe, which reads PostgreSQL, is not here). No servers.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "../bench/pg_costs.hpp"

using namespace exo::bench;

namespace {

PgCounters before_run() {
    PgCounters c;
    c.wal_insert_lsn = 1'000'000;
    c.wal_records = 100;
    c.wal_fpi = 10;
    c.wal_bytes = 50'000;
    c.wal_sync = 5;
    c.checkpoints = 2;
    c.statements_available = true;
    c.tables["accounts"] = {.inserted = 50, .updated = 10, .hot_updated = 5, .indexes = 1};
    c.tables["untouched"] = {.inserted = 7, .indexes = 3};
    c.statements["COMMIT"] = {.calls = 4, .total_exec_ms = 2, .wal_bytes = 100};
    return c;
}

PgCounters after_run() {
    PgCounters c = before_run();
    c.wal_insert_lsn += 600'000;  // 1,000 records: 600 B each
    c.wal_records += 5'000;
    c.wal_fpi += 100;
    c.wal_bytes += 590'000;
    c.wal_sync += 20;
    c.checkpoints += 1;
    c.tables["accounts"] = {.inserted = 550,   // 500 inserted
                            .updated = 1'010,  // 1,000 updated, 800 of them HOT
                            .hot_updated = 805,
                            .indexes = 1,
                            .heap_bytes = 8192,
                            .index_bytes = 16384};
    // Created during the run: counted from zero.
    c.tables["exo_processed"] = {
        .inserted = 1'000, .deleted = 100, .indexes = 2, .partial_indexes = 1};
    c.statements["COMMIT"] = {.calls = 14, .total_exec_ms = 32, .wal_bytes = 1'100};
    c.statements["INSERT INTO exo_processed\n   SELECT $1"] = {
        .calls = 10, .total_exec_ms = 90, .rows = 1'000, .wal_bytes = 200'000, .wal_fpi = 5};
    c.statements["SELECT 1"] = {.calls = 0};  // never run in the window: left out
    return c;
}

}  // namespace

TEST_CASE("pg costs are the counters' advance over the run divided by its records") {
    const PgCosts c = pg_costs_between(before_run(), after_run(), 1000, 0.25);
    CHECK(c.records == 1000);
    CHECK(c.wal_bytes_lsn == doctest::Approx(600));
    CHECK(c.wal_records == doctest::Approx(5));
    CHECK(c.wal_fpi == doctest::Approx(0.1));
    CHECK(c.wal_bytes == doctest::Approx(590));
    CHECK(c.wal_syncs_per_1000 == doctest::Approx(20));
    CHECK(c.checkpoints == doctest::Approx(1));
    CHECK(c.postgres_cpu_ms_per_1000 == doctest::Approx(250));  // 0.25 s over 1,000 records

    // Tables the run wrote, most rows first; the untouched one left out.
    REQUIRE(c.tables.size() == 2);
    const auto& accounts = c.tables[0];
    CHECK(accounts.name == "accounts");
    CHECK(accounts.inserted == doctest::Approx(0.5));
    CHECK(accounts.updated == doctest::Approx(1.0));
    CHECK(accounts.hot_updated == doctest::Approx(0.8));
    // An entry in its one index per inserted row and per non-HOT update.
    CHECK(accounts.index_entries == doctest::Approx(0.5 + 0.2));
    CHECK(accounts.heap_bytes == doctest::Approx(8.192));
    CHECK(accounts.index_bytes == doctest::Approx(16.384));
    const auto& processed = c.tables[1];
    CHECK(processed.name == "exo_processed");
    CHECK(processed.inserted == doctest::Approx(1.0));
    CHECK(processed.deleted == doctest::Approx(0.1));
    CHECK(processed.index_entries == doctest::Approx(2.0));
    CHECK(processed.partial_indexes == 1);

    // Statements that ran, most time first, with their share of the run's statement time.
    REQUIRE(c.statements.size() == 2);
    const auto& insert = c.statements[0];
    CHECK(insert.query == "INSERT INTO exo_processed SELECT $1");
    CHECK(insert.calls_per_1000 == doctest::Approx(10));
    CHECK(insert.mean_us == doctest::Approx(9000));
    CHECK(insert.rows_per_call == doctest::Approx(100));
    CHECK(insert.wal_bytes_per_call == doctest::Approx(20'000));
    CHECK(insert.wal_bytes_per_record == doctest::Approx(200));
    CHECK(insert.fpi_per_1000_calls == doctest::Approx(500));
    CHECK(insert.time_share == doctest::Approx(0.75));  // 90 of 120 ms
    const auto& commit = c.statements[1];
    CHECK(commit.query == "COMMIT");
    CHECK(commit.calls_per_1000 == doctest::Approx(10));
    CHECK(commit.mean_us == doctest::Approx(3000));
    CHECK(commit.time_share == doctest::Approx(0.25));
    CHECK(c.statement_ms_per_1000 == doctest::Approx(120));
    CHECK(c.statements_available);
}

TEST_CASE("a pg counter that went backwards during the run counts from zero") {
    PgCounters before = before_run(), after = before_run();
    after.wal_sync = 3;  // pg_stat_reset_shared('wal'), then 3 syncs
    after.statements["COMMIT"] = {.calls = 2, .total_exec_ms = 1};  // evicted and re-created
    const PgCosts c = pg_costs_between(before, after, 1000, 0);
    CHECK(c.wal_syncs_per_1000 == doctest::Approx(3));
    REQUIRE(c.statements.size() == 1);
    CHECK(c.statements[0].calls_per_1000 == doctest::Approx(2));
}

TEST_CASE("pg costs without pg_stat_statements say so and measure the rest") {
    PgCounters before = before_run(), after = after_run();
    before.statements_available = after.statements_available = false;
    const PgCosts c = pg_costs_between(before, after, 1000, NAN);
    CHECK_FALSE(c.statements_available);
    CHECK(std::isnan(c.postgres_cpu_ms_per_1000));
    std::ostringstream out;
    print_pg_costs(out, "exo-default", c, 1);
    CHECK(out.str().find("statements: n/a (pg_stat_statements is not loaded") != std::string::npos);
    CHECK(out.str().find("WAL 600 B/record") != std::string::npos);
}

TEST_CASE(
    "the median of pg costs takes each figure's middle run and keeps a table some runs lack") {
    auto run = [](double wal, double ins, bool with_extra) {
        PgCosts c;
        c.records = 1000;
        c.wal_bytes_lsn = wal;
        c.tables.push_back({.name = "ledger_entries", .inserted = ins, .indexes = 2});
        if (with_extra) c.tables.push_back({.name = "exo_schema_migrations", .inserted = 0.01});
        c.statements.push_back({.query = "COMMIT", .calls_per_1000 = wal / 100, .total_ms = wal});
        c.statements_available = true;
        return c;
    };
    const PgCosts m =
        median_pg_costs({run(700, 1.0, false), run(500, 0.9, true), run(600, 1.1, false)});
    CHECK(m.records == 1000);
    CHECK(m.wal_bytes_lsn == doctest::Approx(600));
    REQUIRE(m.tables.size() == 2);
    CHECK(m.tables[0].name == "ledger_entries");
    CHECK(m.tables[0].inserted == doctest::Approx(1.0));
    CHECK(m.tables[0].indexes == 2);
    CHECK(m.tables[1].name == "exo_schema_migrations");
    CHECK(m.tables[1].inserted == doctest::Approx(0.01));  // the one run that had it
    REQUIRE(m.statements.size() == 1);
    CHECK(m.statements[0].calls_per_1000 == doctest::Approx(6));
    CHECK(m.statements_available);
    CHECK(median_pg_costs({}).tables.empty());
}

TEST_CASE("the pg costs comparison is a Markdown table with each side and their ratio") {
    const PgCosts exo = pg_costs_between(before_run(), after_run(), 1000, 0.25);
    PgCounters peer_after = before_run();
    peer_after.wal_insert_lsn += 300'000;
    peer_after.tables["peer_inbox"] = {.inserted = 900, .indexes = 1};
    peer_after.statements["SELECT a | b"] = {.calls = 1, .total_exec_ms = 1};
    const PgCosts peer = pg_costs_between(before_run(), peer_after, 1000, 0.1);
    std::ostringstream out;
    print_pg_costs_comparison(out, "exo-default", exo, "inbox-peer", peer);
    const std::string text = out.str();
    CHECK(text.find("=== PostgreSQL per record: exo-default vs inbox-peer (Markdown) ===") !=
          std::string::npos);
    CHECK(text.find("| per record | exo-default | inbox-peer | exo-default / inbox-peer |") !=
          std::string::npos);
    CHECK(text.find("| WAL bytes (insert LSN advance) | 600 | 300 | 2.00 |") != std::string::npos);
    CHECK(text.find("| PostgreSQL CPU ms per 1,000 records | 250.0 | 100.0 | 2.50 |") !=
          std::string::npos);
    // One row per table of either side; a side without the table shows "-".
    CHECK(text.find("| table `exo_processed` | 1.00 ins, 0.10 del; 2 idx (1 partial): 2.00 "
                    "entries | - | |") != std::string::npos);
    CHECK(text.find("| table `peer_inbox` | - | 0.90 ins; 1 idx: 0.90 entries | |") !=
          std::string::npos);
    // A '|' in a statement would end its cell.
    CHECK(text.find("`SELECT a / b`") != std::string::npos);
}

TEST_CASE("a shortened query is on one line and cut with an ellipsis") {
    CHECK(shorten_query("  INSERT INTO t\n\t(a, b)   VALUES ($1, $2)  ", 100) ==
          "INSERT INTO t (a, b) VALUES ($1, $2)");
    CHECK(shorten_query("SELECT 1234567890", 10) == "SELECT ...");
}
