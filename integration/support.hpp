#pragma once
// What every integration test needs: the addresses of the real Redis,
// PostgreSQL and standalone mock Kafka started by scripts/services.sh (exported
// from its env file by scripts/test.sh), and unique names so tests never share
// topics, groups or keys. A missing address fails the test: nothing is skipped.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <thread>

#include "ledger_migrations.hpp"
#include "pg/migrations.hpp"
#include "redis/redis_connection.hpp"

namespace exo::testing {

inline std::string required_env(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0')
        throw std::runtime_error(std::string(name) +
                                 " is not set: run the integration tests through scripts/test.sh, "
                                 "which starts Redis, PostgreSQL and the mock Kafka cluster");
    return v;
}

inline RedisOptions redis_options() {
    RedisOptions o;
    o.host = required_env("EXO_REDIS_HOST");
    o.port = std::stoi(required_env("EXO_REDIS_PORT"));
    return o;
}

inline std::string postgres_uri() {
    return required_env("EXO_POSTGRES_URI");
}

// Standalone `exo mock-kafka` broker started by scripts/services.sh.
inline std::string kafka_bootstrap() {
    return required_env("EXO_KAFKA_BOOTSTRAP");
}

// The `exo` binary that child-process tests run: $EXO_BINARY (scripts/test.sh
// sets it to the one handlers/ built against the installed package), else this
// build's own.
inline std::string exo_binary() {
    const char* v = std::getenv("EXO_BINARY");
    return v != nullptr && *v != '\0' ? v : EXO_DEFAULT_BINARY;
}

// The example application's migrations (handlers/sql), as its binary carries them.
inline std::vector<Migration> ledger_migrations() {
    std::vector<Migration> out;
    for (const auto& m : handlers::kLedgerMigrations)
        out.push_back({std::string(m.name), std::string(m.sql)});
    return out;
}

// The one number `sql` selects (a count, a sequence). A result without exactly one
// row throws, naming the query, so the test case fails alone: libpqxx 6's field of a
// row that is not there reads a null pointer (SIGSEGV), which ended the whole suite.
inline std::int64_t single_number(pqxx::transaction_base& tx, const std::string& sql) {
    const auto rows = tx.exec(sql);
    if (rows.size() != 1)
        throw std::runtime_error(sql + " returned " + std::to_string(rows.size()) +
                                 " rows, not one");
    return rows[0][0].as<std::int64_t>();
}

// Polls `pred` every 20 ms until it holds or `timeout` passes; returns its last answer.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

// Polls `observe()` every 20 ms until `done(value)` holds and returns that value; after
// `timeout` fails the test case, saying what it waited for and the last value observed.
// The deadline is generous (the box may be loaded), the polling frequent (no test waits
// longer than its condition needs).
template <class Observe, class Done>
auto wait_until(const std::string& what, std::chrono::milliseconds timeout, Observe observe,
                Done done) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto value = observe();
        if (done(value)) return value;
        if (std::chrono::steady_clock::now() >= deadline)
            FAIL("gave up after " << timeout.count() << " ms waiting for " << what
                                  << "; last observed: " << value);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// "prefix-<pid>-<n>-<ms>": unique across tests and test runs.
inline std::string unique_name(const std::string& prefix) {
    static std::atomic<int> counter{0};
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
           std::to_string(ms % 100000000);
}

}  // namespace exo::testing
