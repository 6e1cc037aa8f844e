// Which process wrote a dedup row (sql/0011_exo_processes.sql) against the real
// PostgreSQL: new rows carry the id of the process's exo_processes row, rows
// written before the migration (and by an older exo during the upgrade) keep
// their applied_by text, and `exo inspect`, `exo dlq list` and a replay ticket
// show the same text for both.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "ops/dedup_queries.hpp"
#include "pg/framework_statements.hpp"
#include "pg/migrations.hpp"
#include "pg/process_identity.hpp"
#include "support.hpp"

namespace {

// A fresh schema, dropped at the end, and a URI whose sessions use it.
struct Schema {
    std::string name;
    std::string uri;

    Schema() {
        name = exo::testing::unique_name("processes");
        std::replace(name.begin(), name.end(), '-', '_');
        pqxx::connection c(exo::testing::postgres_uri());
        pqxx::nontransaction(c).exec("CREATE SCHEMA " + name);
        const auto base = exo::testing::postgres_uri();
        uri = base + (base.find('?') == std::string::npos ? "?" : "&") +
              "options=-csearch_path%3D" + name;
    }
    ~Schema() {
        try {
            pqxx::connection c(exo::testing::postgres_uri());
            pqxx::nontransaction(c).exec("DROP SCHEMA IF EXISTS " + name + " CASCADE");
        } catch (const std::exception& e) {
            MESSAGE("could not drop schema " << name << ": " << e.what());
        }
    }
};

// exo's migrations named before `name` (before: true) or from it on.
void run_migrations(pqxx::connection& c, const std::string& name, bool before) {
    for (const auto& m : exo::framework_migrations())
        if ((m.name < name) == before) pqxx::nontransaction(c).exec(m.sql);
}

// A dedup row as an exo before migration 0011 writes it: the process as text.
void insert_as_older_exo(pqxx::connection& c, const std::string& key, const std::string& outcome,
                         const std::string& by) {
    pqxx::nontransaction(c).exec_params(
        "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
        " kafka_partition, kafka_offset, outcome, result, applied_by)"
        " VALUES ('g', $1, 1, 't', 0, 0, $2, 'why', $3)",
        key, outcome, by);
}

exo::ProcessedRow row_of(const std::string& key, exo::StoredOutcome outcome) {
    return {"g",
            key,
            exo::FencingToken{1},
            {exo::Topic{"t"}, exo::Partition{0}},
            exo::Offset{0},
            outcome,
            "why",
            {}};
}

std::string applied_by(pqxx::connection& c, const std::string& key) {
    const auto row = exo::find_dedup_row(c, "g", key);
    REQUIRE(row.has_value());
    return row->applied_by.value_or("(none)");
}

}  // namespace

TEST_CASE(
    "after migration 0011 new dedup rows name their process by id, and inspect, dlq list and "
    "replay show the same text for them as for rows written before it or by an older exo during "
    "the upgrade") {
    Schema schema;
    pqxx::connection c(schema.uri);
    run_migrations(c, "0011", true);
    insert_as_older_exo(c, "old-applied", "APPLIED", "old-host/1/exo-0.1.0");
    insert_as_older_exo(c, "old-dead", "DEAD_LETTERED", "old-host/1/exo-0.1.0");
    run_migrations(c, "0011", false);
    // An older exo still running during the upgrade inserts as before.
    insert_as_older_exo(c, "older-dead", "DEAD_LETTERED", "old-host/2/exo-0.1.0");

    pqxx::connection writer(schema.uri);
    exo::prepare_framework_statements(writer);
    {
        pqxx::work tx(writer);
        CHECK_FALSE(exo::insert_processed(tx, row_of("new-applied", exo::StoredOutcome::applied))
                        .has_value());
        CHECK_FALSE(exo::insert_processed(tx, row_of("new-dead", exo::StoredOutcome::dead_lettered))
                        .has_value());
        tx.commit();
    }
    // A second connection of the process reuses its row.
    pqxx::connection another(schema.uri);
    exo::prepare_framework_statements(another);

    // New rows carry 4 bytes, not the text.
    pqxx::connection reader(schema.uri);
    pqxx::nontransaction read(reader);
    CHECK(read.exec("SELECT count(*) FROM exo_processed WHERE applied_by IS NULL"
                    " AND applied_by_process IS NOT NULL")[0][0]
              .as<int>() == 2);
    CHECK(read.exec_params("SELECT count(*) FROM exo_processes WHERE identity = $1",
                           exo::process_identity())[0][0]
              .as<int>() == 1);

    CHECK(applied_by(c, "old-applied") == "old-host/1/exo-0.1.0");
    CHECK(applied_by(c, "new-applied") == exo::process_identity());

    const auto letters = exo::list_dead_letters(c, "g", {});
    REQUIRE(letters.size() == 3);
    for (const auto& letter : letters) {
        CAPTURE(letter.key);
        const std::string expected = letter.key == "new-dead"   ? exo::process_identity()
                                     : letter.key == "old-dead" ? "old-host/1/exo-0.1.0"
                                                                : "old-host/2/exo-0.1.0";
        CHECK(letter.dead_lettered_by.value_or("(none)") == expected);
    }

    // A replay ticket keeps who dead-lettered the key.
    CHECK(exo::open_replay_ticket(c, "g", "new-dead"));
    CHECK(exo::open_replay_ticket(c, "g", "old-dead"));
    const auto by = [&](const std::string& key) {
        return read
            .exec_params("SELECT dead_lettered_by FROM exo_replays WHERE idempotency_key = $1",
                         key)[0][0]
            .as<std::string>();
    };
    CHECK(by("new-dead") == exo::process_identity());
    CHECK(by("old-dead") == "old-host/1/exo-0.1.0");
}

TEST_CASE("connections that register the process at once all get its one exo_processes row") {
    Schema schema;
    {
        pqxx::connection c(schema.uri);
        exo::apply_migrations(c);
    }
    constexpr int kConnections = 6;
    std::vector<std::unique_ptr<pqxx::connection>> connections;
    for (int i = 0; i < kConnections; ++i)
        connections.push_back(std::make_unique<pqxx::connection>(schema.uri));
    std::vector<int> ids(kConnections, -1);
    std::vector<std::string> errors(kConnections);
    {
        std::vector<std::jthread> threads;
        for (int i = 0; i < kConnections; ++i)
            threads.emplace_back([&, i] {
                try {
                    ids[i] = exo::register_process(*connections[i]);
                } catch (const std::exception& e) {
                    errors[i] = e.what();
                }
            });
    }
    for (int i = 0; i < kConnections; ++i) {
        CAPTURE(i);
        CHECK(errors[i] == "");
        CHECK(ids[i] == ids[0]);
    }
    pqxx::nontransaction tx(*connections[0]);
    CHECK(tx.exec("SELECT count(*) FROM exo_processes")[0][0].as<int>() == 1);
    CHECK(tx.exec("SELECT id FROM exo_processes")[0][0].as<int>() == ids[0]);
}
