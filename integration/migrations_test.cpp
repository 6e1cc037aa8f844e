// pg/migrations.hpp against the real PostgreSQL: order, idempotence, the
// checksum refusal, the upgrade of a table written before checksums were kept,
// the pending list `run` checks, the advisory lock, and a failing migration.
// Each test works in its own schema (search_path), dropped at the end.
#include <doctest/doctest.h>

#include <algorithm>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "pg/migrations.hpp"
#include "support.hpp"

using exo::Migration;

namespace {

// A fresh schema and a URI whose sessions use it. lock_timeout bounds the wait
// for the migration lock, so a lock that is never released fails the test
// instead of hanging it.
struct Schema {
    std::string name;
    std::string uri;

    Schema() {
        name = exo::testing::unique_name("migrations");
        std::replace(name.begin(), name.end(), '-', '_');
        pqxx::connection c(exo::testing::postgres_uri());
        pqxx::nontransaction tx(c);
        tx.exec("CREATE SCHEMA " + name);
        auto base = exo::testing::postgres_uri();
        // libpq URI parameter `options`: "-c search_path=<schema> -c lock_timeout=20s".
        uri = base + (base.find('?') == std::string::npos ? "?" : "&") +
              "options=-csearch_path%3D" + name + "%20-clock_timeout%3D20s";
    }
    ~Schema() {
        try {
            pqxx::connection c(exo::testing::postgres_uri());
            pqxx::nontransaction tx(c);
            tx.exec("DROP SCHEMA IF EXISTS " + name + " CASCADE");
        } catch (const std::exception& e) {
            MESSAGE("could not drop schema " << name << ": " << e.what());
        }
    }
};

std::vector<std::string> framework_names() {
    std::vector<std::string> out;
    for (const auto& m : exo::framework_migrations()) out.push_back(m.name);
    return out;
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<std::string> recorded_names(pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    std::vector<std::string> out;
    for (const auto& row : tx.exec("SELECT name FROM exo_schema_migrations ORDER BY name"))
        out.push_back(row[0].as<std::string>());
    return out;
}

bool table_exists(pqxx::connection& c, const std::string& table) {
    pqxx::nontransaction tx(c);
    return tx.exec_params("SELECT to_regclass($1) IS NOT NULL", table)[0][0].as<bool>();
}

std::string sorted_joined(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += n + " ";
    return out;
}

}  // namespace

TEST_CASE("exo's migrations are applied first, then the application's in name order") {
    Schema schema;
    pqxx::connection c(schema.uri);
    // Each application migration fails unless the ones before it in the order
    // ran: 0001 needs exo's table, 0200 needs 0100's.
    std::vector<Migration> application = {
        {"0200_b.sql", "CREATE TABLE app_b (id int REFERENCES app_a (id));"},
        {"0001_app_first.sql", "ALTER TABLE exo_processed ADD COLUMN app_note text;"},
        {"0100_a.sql", "CREATE TABLE app_a (id int PRIMARY KEY);\n-- caf\xC3\xA9\n"}};
    auto applied = exo::apply_migrations(c, application);
    CHECK(applied == plus(framework_names(), {"0001_app_first.sql", "0100_a.sql", "0200_b.sql"}));

    pqxx::nontransaction tx(c);
    auto rows = tx.exec("SELECT name, owner, checksum FROM exo_schema_migrations ORDER BY name");
    CHECK(rows.size() == applied.size());
    auto plan = exo::plan_migrations(exo::framework_migrations(), application);
    for (const auto& p : plan) {
        CAPTURE(p.migration.name);
        auto row = tx.exec_params(
            "SELECT owner, checksum, encode(sha256(convert_to($2, 'UTF8')), "
            "'hex') FROM exo_schema_migrations WHERE name = $1",
            p.migration.name, p.migration.sql);
        REQUIRE(row.size() == 1);
        CHECK(row[0][0].as<std::string>() == exo::to_string(p.owner));
        CHECK(row[0][1].as<std::string>() == p.checksum);
        // The recorded checksum is the one PostgreSQL computes for the text.
        CHECK(row[0][2].as<std::string>() == p.checksum);
    }
}

TEST_CASE("a second run applies nothing and records nothing new") {
    Schema schema;
    pqxx::connection c(schema.uri);
    std::vector<Migration> application = {{"0100_a.sql", "CREATE TABLE app_a (id int);"}};
    CHECK_FALSE(exo::apply_migrations(c, application).empty());
    auto before = recorded_names(c);
    CHECK(exo::apply_migrations(c, application).empty());
    pqxx::connection other(schema.uri);
    CHECK(exo::apply_migrations(other, application).empty());
    CHECK(recorded_names(c) == before);
    CHECK(exo::pending_migrations(c, application).empty());
}

TEST_CASE("a changed applied migration is refused, naming it, and nothing is applied") {
    Schema schema;
    {
        pqxx::connection c(schema.uri);
        exo::apply_migrations(c, {{"0100_a.sql", "CREATE TABLE app_a (id int);"}});
    }
    std::vector<Migration> edited = {{"0100_a.sql", "CREATE TABLE app_a (id bigint);"},
                                     {"0101_b.sql", "CREATE TABLE app_b (id int);"}};
    pqxx::connection c(schema.uri);
    std::string message;
    try {
        exo::apply_migrations(c, edited);
    } catch (const exo::MigrationError& e) {
        message = e.what();
    }
    CHECK(message.find("0100_a.sql") != std::string::npos);
    CHECK(message.find(exo::sha256_hex("CREATE TABLE app_a (id int);")) != std::string::npos);
    CHECK(message.find(exo::sha256_hex(edited[0].sql)) != std::string::npos);
    CHECK(message.find("add a new migration") != std::string::npos);
    CHECK_FALSE(table_exists(c, "app_b"));
    CHECK(recorded_names(c) == plus(framework_names(), {"0100_a.sql"}));
    CHECK_THROWS_AS(exo::pending_migrations(c, edited), exo::MigrationError);

    // The refusal released the lock: another session migrates with the original text.
    pqxx::connection other(schema.uri);
    edited[0].sql = "CREATE TABLE app_a (id int);";
    CHECK(exo::apply_migrations(other, edited) == std::vector<std::string>{"0101_b.sql"});
}

TEST_CASE("a database migrated before checksums were kept is accepted and its checksums recorded") {
    Schema schema;
    pqxx::connection c(schema.uri);
    std::vector<Migration> application = {{"0100_a.sql", "CREATE TABLE app_a (id int);"}};
    {
        // What earlier versions of `exo migrate` left: names and times only.
        pqxx::work tx(c);
        tx.exec(
            "CREATE TABLE exo_schema_migrations ("
            " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
        for (const auto& m : exo::framework_migrations()) {
            tx.exec(m.sql);
            tx.exec_params("INSERT INTO exo_schema_migrations (name) VALUES ($1)", m.name);
        }
        tx.exec(application[0].sql);
        tx.exec("INSERT INTO exo_schema_migrations (name) VALUES ('0100_a.sql')");
        tx.commit();
    }
    // `run`'s check reads the old table as it is, and finds nothing missing.
    CHECK(exo::pending_migrations(c, application).empty());

    CHECK(exo::apply_migrations(c, application).empty());
    auto plan = exo::plan_migrations(exo::framework_migrations(), application);
    {
        pqxx::nontransaction tx(c);
        for (const auto& p : plan) {
            CAPTURE(p.migration.name);
            auto row =
                tx.exec_params("SELECT owner, checksum FROM exo_schema_migrations WHERE name = $1",
                               p.migration.name);
            REQUIRE(row.size() == 1);
            CHECK(row[0][0].as<std::string>() == exo::to_string(p.owner));
            CHECK(row[0][1].as<std::string>() == p.checksum);
        }
    }
    // From now on the recorded text is verified.
    CHECK_THROWS_AS(exo::apply_migrations(c, {{"0100_a.sql", "CREATE TABLE app_a (id bigint);"}}),
                    exo::MigrationError);
}

TEST_CASE("a database migrated when the ledger was exo's own needs nothing from the ledger app") {
    // Earlier versions embedded sql/0002_ledger.sql; it is now the example
    // application's, under the same name and with an edited comment. The legacy
    // row has no checksum, so it is trusted and recorded as the application's.
    Schema schema;
    pqxx::connection c(schema.uri);
    auto ledger = exo::testing::ledger_migrations();
    REQUIRE(ledger.size() == 1);
    REQUIRE(ledger[0].name == "0002_ledger.sql");
    {
        pqxx::work tx(c);
        tx.exec(
            "CREATE TABLE exo_schema_migrations ("
            " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
        for (const auto& m : exo::plan_migrations(exo::framework_migrations(), ledger)) {
            tx.exec(m.migration.sql);
            tx.exec_params("INSERT INTO exo_schema_migrations (name) VALUES ($1)",
                           m.migration.name);
        }
        tx.commit();
    }
    CHECK(exo::pending_migrations(c, ledger).empty());
    CHECK(exo::apply_migrations(c, ledger).empty());
    pqxx::nontransaction tx(c);
    auto row =
        tx.exec("SELECT owner, checksum FROM exo_schema_migrations WHERE name = '0002_ledger.sql'");
    REQUIRE(row.size() == 1);
    CHECK(row[0][0].as<std::string>() == "application");
    CHECK(row[0][1].as<std::string>() == exo::sha256_hex(ledger[0].sql));
}

TEST_CASE("a migration recorded as exo's is still applied when the application brings it") {
    // The ledger move: the same name and text, now from the application's set.
    Schema schema;
    pqxx::connection c(schema.uri);
    Migration moved{"0100_moved.sql", "CREATE TABLE moved (id int);"};
    exo::apply_migrations(c);
    {
        pqxx::work tx(c);
        tx.exec(moved.sql);
        tx.exec_params(
            "INSERT INTO exo_schema_migrations (name, owner, checksum) VALUES ($1, 'exo', $2)",
            moved.name, exo::sha256_hex(moved.sql));
        tx.commit();
    }
    CHECK(exo::pending_migrations(c, {moved}).empty());
    CHECK(exo::apply_migrations(c, {moved}).empty());
}

TEST_CASE("pending_migrations names every missing migration, exo's first, and creates nothing") {
    Schema schema;
    pqxx::connection c(schema.uri);
    std::vector<Migration> application = {{"0101_b.sql", "CREATE TABLE app_b (id int);"},
                                          {"0100_a.sql", "CREATE TABLE app_a (id int);"}};
    CHECK(exo::pending_migrations(c, application) ==
          plus(framework_names(), {"0100_a.sql", "0101_b.sql"}));
    CHECK_FALSE(table_exists(c, "exo_schema_migrations"));

    exo::apply_migrations(c, {application[1]});
    CHECK(exo::pending_migrations(c, application) == std::vector<std::string>{"0101_b.sql"});
    CHECK(exo::pending_migrations(c).empty());

    exo::apply_migrations(c, application);
    CHECK(exo::pending_migrations(c, application).empty());
}

TEST_CASE("two migrators at once apply each migration exactly once (advisory lock)") {
    Schema schema;
    // The slow migration keeps the first migrator inside the lock while the
    // second arrives; without the lock the second would collide on exo's tables.
    std::vector<Migration> application = {
        {"0100_slow.sql", "SELECT pg_sleep(0.5); CREATE TABLE app_slow (id int);"},
        {"0101_after.sql", "CREATE TABLE app_after (id int);"}};
    std::vector<std::string> applied[2];
    std::string errors[2];
    {
        std::vector<std::jthread> threads;
        threads.reserve(2);
        for (int i = 0; i < 2; ++i)
            threads.emplace_back([&, i] {
                try {
                    pqxx::connection c(schema.uri);
                    applied[i] = exo::apply_migrations(c, application);
                } catch (const std::exception& e) {
                    errors[i] = e.what();
                }
            });
    }
    CHECK(errors[0] == "");
    CHECK(errors[1] == "");
    auto all = plus(framework_names(), {"0100_slow.sql", "0101_after.sql"});
    // One applied everything, the other waited and found nothing to do.
    CHECK(sorted_joined(plus(applied[0], applied[1])) == sorted_joined(all));
    CHECK((applied[0].empty() || applied[1].empty()));
    pqxx::connection c(schema.uri);
    CHECK(sorted_joined(recorded_names(c)) == sorted_joined(all));
}

TEST_CASE("a failing migration is rolled back alone, the ones before it stay, the error names it") {
    Schema schema;
    std::vector<Migration> application = {
        {"0100_ok.sql", "CREATE TABLE app_ok (id int);"},
        {"0101_bad.sql", "CREATE TABLE app_half (id int);\nSELECT * FROM no_such_table;"},
        {"0102_after.sql", "CREATE TABLE app_after (id int);"}};
    pqxx::connection c(schema.uri);
    std::string message, failed_name;
    try {
        exo::apply_migrations(c, application);
        FAIL("the failing migration did not throw");
    } catch (const exo::MigrationFailed& e) {
        message = e.what();
        failed_name = e.name();
    }
    CHECK(failed_name == "0101_bad.sql");
    CHECK(message.find("0101_bad.sql (application)") != std::string::npos);
    CHECK(message.find("no_such_table") != std::string::npos);
    CHECK(message.find("42P01") != std::string::npos);
    CHECK(table_exists(c, "app_ok"));
    CHECK_FALSE(table_exists(c, "app_half"));
    CHECK_FALSE(table_exists(c, "app_after"));
    CHECK(recorded_names(c) == plus(framework_names(), {"0100_ok.sql"}));
    CHECK(exo::pending_migrations(c, application) ==
          std::vector<std::string>{"0101_bad.sql", "0102_after.sql"});

    // Fixed, it applies from another session: the failure released the lock.
    application[1].sql = "CREATE TABLE app_half (id int);";
    pqxx::connection other(schema.uri);
    CHECK(exo::apply_migrations(other, application) ==
          std::vector<std::string>{"0101_bad.sql", "0102_after.sql"});
}
