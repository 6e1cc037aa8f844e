#include "pg/migrations.hpp"

#include <pqxx/pqxx>
#include <set>

#include "core/embedded_file.hpp"

namespace exo {
namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS exo_schema_migrations ("
    " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())";
// An arbitrary constant: the advisory lock key of `exo migrate`.
constexpr long long kMigrationLock = 0x65786f6d6967;  // "exomig"

std::set<std::string> applied_names(pqxx::transaction_base& tx) {
    std::set<std::string> out;
    for (const auto& row : tx.exec("SELECT name FROM exo_schema_migrations"))
        out.insert(row[0].as<std::string>());
    return out;
}

bool table_exists(pqxx::transaction_base& tx) {
    return tx.exec("SELECT to_regclass('exo_schema_migrations') IS NOT NULL")[0][0].as<bool>();
}

}  // namespace

std::vector<std::string> apply_migrations(pqxx::connection& connection) {
    {
        pqxx::nontransaction tx(connection);
        tx.exec(kCreateTable);
        tx.exec("SELECT pg_advisory_lock(" + std::to_string(kMigrationLock) + ")");
    }
    std::vector<std::string> applied_now;
    try {
        for (const auto& file : embedded::sql::files()) {
            pqxx::work tx(connection);
            if (applied_names(tx).count(std::string(file.name))) continue;
            tx.exec(std::string(file.contents));
            tx.exec_params("INSERT INTO exo_schema_migrations (name) VALUES ($1)",
                           std::string(file.name));
            tx.commit();
            applied_now.emplace_back(file.name);
        }
    } catch (...) {
        pqxx::nontransaction unlock(connection);
        unlock.exec("SELECT pg_advisory_unlock(" + std::to_string(kMigrationLock) + ")");
        throw;
    }
    pqxx::nontransaction unlock(connection);
    unlock.exec("SELECT pg_advisory_unlock(" + std::to_string(kMigrationLock) + ")");
    return applied_now;
}

std::vector<std::string> pending_migrations(pqxx::connection& connection) {
    pqxx::nontransaction tx(connection);
    std::set<std::string> applied;
    if (table_exists(tx)) applied = applied_names(tx);
    std::vector<std::string> pending;
    for (const auto& file : embedded::sql::files())
        if (!applied.count(std::string(file.name))) pending.emplace_back(file.name);
    return pending;
}

}  // namespace exo
