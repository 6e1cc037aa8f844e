#pragma once
// What a test's schema holds after a run, read straight from PostgreSQL.
#include <doctest/doctest.h>

#include <map>
#include <pqxx/pqxx>
#include <string>

#include "pipeline_harness.hpp"
#include "support.hpp"

namespace exo::testing {

using Rows = std::map<std::string, std::string>;

// The process that wrote an exo_processed row as `exo inspect` shows it: its
// exo_processes identity, or the text of a row written before migration 0011.
inline const std::string kAppliedBy =
    "coalesce((SELECT x.identity FROM exo_processes x WHERE x.id = applied_by_process),"
    " applied_by)";

// "outcome" or "outcome/result" of every dedup row, by key. Every row must
// name the process that wrote it (applied_by), the set-based insert's too.
inline Rows processed(const PipelineHarness& h) {
    pqxx::connection c(h.postgres_uri());
    pqxx::nontransaction tx(c);
    Rows out;
    for (const auto& row : tx.exec("SELECT idempotency_key, outcome, result, " + kAppliedBy +
                                   " IS NOT NULL FROM exo_processed")) {
        CHECK(row[3].as<bool>());
        out[row[0].as<std::string>()] =
            row[1].as<std::string>() + (row[2].is_null() ? "" : "/" + row[2].as<std::string>());
    }
    return out;
}

// A dedup row inserted by a transaction left open, as another daemon's (or a
// frozen one's) in the middle of applying the key: the row's lock is held until
// commit() or rollback().
class HeldDedupRow {
public:
    HeldDedupRow(const PipelineHarness& h, const std::string& key)
        : connection_(h.postgres_uri()), session_(connection_) {
        session_.exec("BEGIN");
        session_.exec_params(
            "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
            " kafka_partition, kafka_offset, outcome) VALUES ($1, $2, 0, 't', 0, 0, 'APPLIED')",
            h.config().kafka.group_id, key);
    }
    void commit() { session_.exec("COMMIT"); }
    void rollback() { session_.exec("ROLLBACK"); }

private:
    pqxx::connection connection_;
    pqxx::nontransaction session_;
};

// Deadlocks PostgreSQL detected in the tests' database so far (pg_stat_database;
// a transaction's statistics arrive there a little after it ends).
inline std::int64_t deadlocks_detected() {
    pqxx::connection c(postgres_uri());
    pqxx::nontransaction tx(c);
    return tx
        .exec("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")[0][0]
        .as<std::int64_t>();
}

}  // namespace exo::testing
