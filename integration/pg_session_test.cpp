// pg/session.hpp against the real PostgreSQL: the server-side limits reach the
// session, a lock wait and an idle transaction end on time, and a broken session
// stays broken; pg/explicit_transaction.hpp never leaves a session inside its
// transaction. Each test uses its own table.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/session.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

exo::PostgresConfig session_config() {
    exo::PostgresConfig config;
    config.uri = exo::testing::postgres_uri();
    return config;
}

// A one-row table (id 1) for the test's row locks, dropped at the end. Declare it
// before the sessions that lock its row, so they are gone when it is dropped.
struct ScratchTable {
    std::string name;

    ScratchTable() {
        auto c = exo::open_postgres_session(session_config());
        name = c->quote_name(exo::testing::unique_name("pg-session"));
        pqxx::nontransaction tx(*c);
        tx.exec("CREATE TABLE " + name + " (id int PRIMARY KEY, v int NOT NULL)");
        tx.exec("INSERT INTO " + name + " VALUES (1, 0)");
    }
    ~ScratchTable() {
        try {
            auto c = exo::open_postgres_session(session_config());
            pqxx::nontransaction tx(*c);
            tx.exec("DROP TABLE IF EXISTS " + name);
        } catch (const std::exception& e) {
            MESSAGE("could not drop " << name << ": " << e.what());
        }
    }
    std::string lock_row() const { return "SELECT v FROM " + name + " WHERE id = 1 FOR UPDATE"; }
};

int value_of(const ScratchTable& table) {
    auto c = exo::open_postgres_session(session_config());
    pqxx::nontransaction tx(*c);
    return tx.exec("SELECT v FROM " + table.name + " WHERE id = 1")[0][0].as<int>();
}

std::string show(pqxx::connection& c, const std::string& setting) {
    pqxx::nontransaction tx(c);
    return tx.exec("SHOW " + setting)[0][0].as<std::string>();
}

// The SQLSTATE `f` throws, or "" if it throws something else or nothing.
template <typename F>
std::string sqlstate_of(F&& f) {
    try {
        f();
    } catch (const pqxx::sql_error& e) {
        return e.sqlstate();
    } catch (...) {
    }
    return {};
}

// Terminates the backend `pid` from another session and waits until it is gone.
void terminate_backend(int pid) {
    auto admin = exo::open_postgres_session(session_config());
    pqxx::nontransaction tx(*admin);
    REQUIRE(
        tx.exec("SELECT pg_terminate_backend(" + std::to_string(pid) + ", 5000)")[0][0].as<bool>());
}

}  // namespace

// Serial (scripts/integration.sh): the cases terminate backends and wait on the server's
// lock and idle timeouts. (Their test_suite("serial") replaces this suite's name.)
TEST_SUITE("pg session") {
    TEST_CASE("a session reports the configured statement, lock and idle-in-transaction timeouts" *
              doctest::test_suite("serial")) {
        auto config = session_config();
        config.statement_timeout = 7000ms;
        config.lock_timeout = 300ms;
        config.idle_in_transaction_timeout = 45000ms;
        auto session = exo::open_postgres_session(config);
        CHECK(show(*session, "statement_timeout") == "7s");
        CHECK(show(*session, "lock_timeout") == "300ms");
        CHECK(show(*session, "idle_in_transaction_session_timeout") == "45s");

        SUBCASE("0 leaves the server's setting") {
            config.statement_timeout = 0ms;
            config.lock_timeout = 0ms;
            config.idle_in_transaction_timeout = 0ms;
            auto plain = exo::open_postgres_session(config);
            CHECK(show(*plain, "statement_timeout") == "0");
            CHECK(show(*plain, "lock_timeout") == "0");
            CHECK(show(*plain, "idle_in_transaction_session_timeout") == "0");
        }
        SUBCASE("a timeout the uri's own options set wins over the configured one") {
            config.uri += (config.uri.find('?') == std::string::npos ? "?" : "&");
            config.uri += "options=-c%20lock_timeout%3D1234";
            auto own = exo::open_postgres_session(config);
            CHECK(show(*own, "lock_timeout") == "1234ms");
            CHECK(show(*own, "statement_timeout") == "7s");
        }
    }

    TEST_CASE(
        "a statement waiting on a row lock held by another transaction fails with 55P03 "
        "after lock_timeout instead of blocking" *
        doctest::test_suite("serial")) {
        ScratchTable table;
        auto holder = exo::open_postgres_session(session_config());
        pqxx::work holding(*holder);
        holding.exec(table.lock_row());

        auto config = session_config();
        config.lock_timeout = 300ms;
        auto waiter = exo::open_postgres_session(config);
        pqxx::nontransaction tx(*waiter);
        const auto start = Clock::now();
        CHECK(sqlstate_of([&] {
                  tx.exec("UPDATE " + table.name + " SET v = v + 1 WHERE id = 1");
              }) == "55P03");
        const auto waited = Clock::now() - start;
        CHECK(waited >= 250ms);
        CHECK(waited < 1500ms);
        // Only the statement failed: the session goes on.
        CHECK(tx.exec("SELECT 1")[0][0].as<int>() == 1);
        holding.abort();
    }

    TEST_CASE(
        "a session idle in its transaction past idle_in_transaction_timeout is ended by the "
        "server, which releases its row locks" *
        doctest::test_suite("serial")) {
        ScratchTable table;
        auto config = session_config();
        config.idle_in_transaction_timeout = 500ms;
        auto frozen = exo::open_postgres_session(config);
        pqxx::nontransaction frozen_tx(*frozen);
        frozen_tx.exec("BEGIN");
        frozen_tx.exec(table.lock_row());
        const auto locked_at = Clock::now();

        // Another session polls for the row without waiting until the server
        // has ended the idle transaction.
        auto other = exo::open_postgres_session(session_config());
        pqxx::nontransaction other_tx(*other);
        bool acquired = false;
        while (!acquired && Clock::now() - locked_at < 10s) {
            const std::string state =
                sqlstate_of([&] { other_tx.exec(table.lock_row() + " NOWAIT"); });
            acquired = state.empty();
            if (!acquired) {
                REQUIRE(state == "55P03");
                std::this_thread::sleep_for(50ms);
            }
        }
        REQUIRE(acquired);
        CHECK(Clock::now() - locked_at >= 450ms);

        CHECK_THROWS_AS(frozen_tx.exec("SELECT 1"), pqxx::broken_connection);
    }

    TEST_CASE(
        "a terminated session stays broken: every later statement throws broken_connection "
        "and no new backend is started" *
        doctest::test_suite("serial")) {
        auto session = exo::open_postgres_session(session_config());
        const int pid = session->backendpid();
        REQUIRE(pid != 0);
        terminate_backend(pid);

        // Three statements: a plain connection would be back on a new backend by
        // the third (see the next test).
        pqxx::nontransaction tx(*session);
        CHECK_THROWS_AS(tx.exec("SELECT 1"), pqxx::broken_connection);
        CHECK_THROWS_AS(tx.exec("SELECT 1"), pqxx::broken_connection);
        CHECK_THROWS_AS(tx.exec("SELECT 1"), pqxx::broken_connection);
        CHECK_FALSE(session->is_open());
        const int after = session->backendpid();
        CHECK((after == 0 || after == pid));
    }

    TEST_CASE(
        "a plain libpqxx 6.4 connection silently reconnects after its backend is terminated "
        "(why exo's sessions inhibit it)" *
        doctest::test_suite("serial")) {
        pqxx::connection plain(exo::testing::postgres_uri());
        const int pid = plain.backendpid();
        terminate_backend(pid);
        pqxx::nontransaction tx(plain);
        // The server's goodbye, then libpqxx drops the dead connection...
        CHECK_THROWS_AS(tx.exec("SELECT 1"), pqxx::broken_connection);
        CHECK_THROWS_AS(tx.exec("SELECT 1"), pqxx::broken_connection);
        // ...and runs the next statement on a new session, in autocommit.
        CHECK(tx.exec("SELECT 1")[0][0].as<int>() == 1);
        CHECK(plain.backendpid() != pid);
    }

    TEST_CASE(
        "a transaction cancelled in its COMMIT round trip (57014) is rolled back, and the "
        "session's next transaction begins and commits") {
        ScratchTable table;
        auto session = exo::open_postgres_session(session_config());
        auto failpoints = exo::Failpoints::parse("pg_commit_probe=cancel");
        {
            exo::ExplicitTransaction cancelled(*session);
            cancelled.statements().exec("UPDATE " + table.name + " SET v = 1 WHERE id = 1");
            CHECK(sqlstate_of([&] { cancelled.commit(&failpoints); }) == "57014");
        }
        // Before: no ROLLBACK was sent, and this BEGIN failed with 25P02.
        exo::ExplicitTransaction next(*session);
        next.statements().exec("UPDATE " + table.name + " SET v = v + 10 WHERE id = 1");
        next.commit(&failpoints);  // armed for the first pass only
        CHECK(value_of(table) == 10);
        CHECK(session->is_open());
    }

    TEST_CASE(
        "BEGIN on a session left inside an aborted transaction closes the session and throws "
        "broken_connection, so its owner opens a new one") {
        auto session = exo::open_postgres_session(session_config());
        {
            pqxx::nontransaction raw(*session);
            raw.exec("BEGIN");
            CHECK(sqlstate_of([&] { raw.exec("SELECT 1 / 0"); }) == "22012");
        }
        CHECK_THROWS_AS(exo::ExplicitTransaction{*session}, pqxx::broken_connection);
        CHECK_FALSE(session->is_open());
    }
}
