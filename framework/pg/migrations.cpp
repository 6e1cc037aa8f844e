#include "pg/migrations.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <pqxx/pqxx>
#include <set>
#include <sstream>

#include "core/embedded_file.hpp"

namespace exo {
namespace {

// An arbitrary constant: the advisory lock key of `exo migrate` (the same key
// older versions took, so an old and a new `exo migrate` also serialize).
constexpr long long kMigrationLock = 0x65786f6d6967;  // "exomig"

constexpr const char* kTable = "exo_schema_migrations";

// ---------------------------------------------------------------------------
// Pure helpers.

bool is_blank(std::string_view text) {
    return text.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

std::string describe(const std::string& name, MigrationOwner owner) {
    return "migration " + name + " (" + to_string(owner) + ")";
}

// Server messages end in a newline; the text is embedded in a sentence.
std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text;
}

// ---------------------------------------------------------------------------
// The lock and the bookkeeping table.

// Holds the session advisory lock of `exo migrate` for its lifetime. Declare it
// before any transaction of the run, so those are gone when it unlocks.
class MigrationLock {
public:
    explicit MigrationLock(pqxx::connection& c) : c_(c) {
        pqxx::nontransaction tx(c_);
        tx.exec("SELECT pg_advisory_lock(" + std::to_string(kMigrationLock) + ")");
        pid_ = c_.backendpid();
    }
    // Call in each transaction of the run after its statements, before its
    // commit. libpqxx 6 silently reconnects a broken connection unless told not
    // to (open_postgres_session does; a bare pqxx::connection does not), and the
    // new session does not hold the lock.
    void check_held() const {
        if (c_.backendpid() != pid_)
            throw pqxx::broken_connection(
                "the session holding the migration lock was lost (the connection was "
                "re-established)");
    }
    ~MigrationLock() {
        // If the session is gone, so is its lock: nothing to do.
        try {
            pqxx::nontransaction tx(c_);
            tx.exec("SELECT pg_advisory_unlock(" + std::to_string(kMigrationLock) + ")");
        } catch (const std::exception& e) {
            spdlog::debug("migration lock not released explicitly: {}", e.what());
        }
    }
    MigrationLock(const MigrationLock&) = delete;
    MigrationLock& operator=(const MigrationLock&) = delete;

private:
    pqxx::connection& c_;
    int pid_ = 0;
};

struct TableShape {
    bool exists = false;
    bool has_owner = false;
    bool has_checksum = false;
};

TableShape table_shape(pqxx::transaction_base& tx) {
    // to_regclass resolves through search_path, like every other statement here.
    auto row = tx.exec(
        "SELECT to_regclass('exo_schema_migrations') IS NOT NULL,"
        " EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('exo_schema_migrations')"
        "         AND attname = 'owner' AND NOT attisdropped),"
        " EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('exo_schema_migrations')"
        "         AND attname = 'checksum' AND NOT attisdropped)")[0];
    return {row[0].as<bool>(), row[1].as<bool>(), row[2].as<bool>()};
}

// Creates the table, or upgrades one written by a version that kept only names
// (name, applied_at): its rows get NULL owner and checksum, which the next
// apply_migrations fills in. Only statements that are needed are sent, so an
// up-to-date table takes no lock a concurrent `exo run` would wait on.
// Called under the advisory lock: no other migrator races the DDL.
void ensure_table(pqxx::connection& c, const MigrationLock& lock) {
    pqxx::nontransaction tx(c);
    auto shape = table_shape(tx);
    lock.check_held();
    if (!shape.exists) {
        tx.exec(std::string("CREATE TABLE ") + kTable +
                " (name text PRIMARY KEY,"
                " applied_at timestamptz NOT NULL DEFAULT now(),"
                " owner text CHECK (owner IN ('exo', 'application')),"
                " checksum text)");
    } else if (!shape.has_owner || !shape.has_checksum) {
        tx.exec(std::string("ALTER TABLE ") + kTable +
                " ADD COLUMN IF NOT EXISTS owner text CHECK (owner IN ('exo', 'application')),"
                " ADD COLUMN IF NOT EXISTS checksum text");
    }
}

// The recorded rows, or nullopt when the table does not exist. A table that
// predates checksums reads as rows without one.
std::optional<std::vector<RecordedMigration>> read_recorded(pqxx::transaction_base& tx) {
    auto shape = table_shape(tx);
    if (!shape.exists) return std::nullopt;
    std::vector<RecordedMigration> out;
    auto rows = tx.exec(std::string("SELECT name, ") +
                        (shape.has_checksum ? "checksum" : "NULL::text") + " FROM " + kTable);
    for (const auto& row : rows) {
        RecordedMigration r{row[0].as<std::string>(), std::nullopt};
        if (!row[1].is_null()) r.checksum = row[1].as<std::string>();
        out.push_back(std::move(r));
    }
    return out;
}

// A recorded row without a checksum was applied before checksums were kept: its
// text cannot be verified, so it is trusted and its current checksum (and owner)
// recorded, instead of refusing every database migrated by an older version.
void record_missing_checksums(pqxx::connection& c, const MigrationLock& lock,
                              const std::vector<PlannedMigration>& plan,
                              const std::vector<std::string>& unverified) {
    if (unverified.empty()) return;
    std::set<std::string> names(unverified.begin(), unverified.end());
    pqxx::work tx(c, "exo_migration_checksums");
    for (const auto& p : plan) {
        if (!names.contains(p.migration.name)) continue;
        tx.exec_params(std::string("UPDATE ") + kTable +
                           " SET checksum = $2, owner = COALESCE(owner, $3)"
                           " WHERE name = $1 AND checksum IS NULL",
                       p.migration.name, p.checksum, std::string(to_string(p.owner)));
    }
    lock.check_held();
    tx.commit();
    for (const auto& name : unverified)
        spdlog::info("recorded the checksum of migration {} (applied before checksums were kept)",
                     name);
}

void apply_one(pqxx::connection& c, const MigrationLock& lock, const PlannedMigration& p,
               std::size_t applied_before) {
    const auto& name = p.migration.name;
    auto earlier = applied_before == 0 ? std::string()
                                       : "; the " + std::to_string(applied_before) +
                                             " applied before it in this run stay applied";
    try {
        pqxx::work tx(c, "exo_migration");
        tx.exec(p.migration.sql);
        tx.exec_params(
            std::string("INSERT INTO ") + kTable + " (name, owner, checksum) VALUES ($1, $2, $3)",
            name, std::string(to_string(p.owner)), p.checksum);
        lock.check_held();
        tx.commit();
    } catch (const pqxx::in_doubt_error& e) {
        throw MigrationFailed(name, describe(name, p.owner) +
                                        ": the answer to its COMMIT was lost, so it may or may "
                                        "not be applied; run `exo migrate` again, it finds it "
                                        "recorded or applies it" +
                                        earlier + ": " + trimmed(e.what()));
    } catch (const pqxx::broken_connection& e) {
        throw MigrationFailed(name, describe(name, p.owner) +
                                        ": the connection was lost before it committed, so it "
                                        "is not applied" +
                                        earlier + ": " + trimmed(e.what()));
    } catch (const pqxx::sql_error& e) {
        auto state = e.sqlstate().empty() ? std::string() : " [SQLSTATE " + e.sqlstate() + "]";
        throw MigrationFailed(name, describe(name, p.owner) + " failed and was rolled back" +
                                        earlier + ": " + trimmed(e.what()) + state);
    }
}

}  // namespace

const char* to_string(MigrationOwner owner) {
    switch (owner) {
        case MigrationOwner::exo:
            return "exo";
        case MigrationOwner::application:
            return "application";
    }
    return "?";
}

std::vector<Migration> framework_migrations() {
    std::vector<Migration> out;
    for (const auto& file : embedded::sql::files())
        out.push_back({std::string(file.name), std::string(file.contents)});
    return out;
}

std::vector<Migration> read_migrations_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec)
        throw MigrationError("cannot read the migrations directory " + dir + ": " + ec.message());
    std::vector<Migration> out;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) break;
        auto name = it->path().filename().string();
        if (name.empty() || name.front() == '.' || name.size() <= 4 || !name.ends_with(".sql"))
            continue;
        auto path = it->path().string();
        auto status = it->status(ec);  // follows a link
        if (ec) throw MigrationError("cannot read migration " + path + ": " + ec.message());
        if (fs::is_directory(status)) continue;
        if (!fs::is_regular_file(status))
            throw MigrationError("migration " + path + " is not a regular file (a dangling link?)");
        std::ifstream in(it->path(), std::ios::binary);
        std::ostringstream text;
        if (in) text << in.rdbuf();
        if (!in || in.bad())
            throw MigrationError("cannot read migration " + path + ": " + std::strerror(errno));
        if (is_blank(text.view()))
            throw MigrationError("migration " + path +
                                 " is empty: a migration must contain SQL (delete the file if "
                                 "it is not meant to be one)");
        out.push_back({std::move(name), std::move(text).str()});
    }
    if (ec)
        throw MigrationError("cannot read the migrations directory " + dir + ": " + ec.message());
    std::sort(out.begin(), out.end(),
              [](const Migration& a, const Migration& b) { return a.name < b.name; });
    return out;
}

std::vector<PlannedMigration> plan_migrations(const std::vector<Migration>& framework,
                                              const std::vector<Migration>& application) {
    std::vector<Migration> sorted = application;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Migration& a, const Migration& b) { return a.name < b.name; });
    std::vector<PlannedMigration> plan;
    std::map<std::string, MigrationOwner> seen;
    auto add = [&](const Migration& m, MigrationOwner owner) {
        if (m.name.empty())
            throw MigrationError(std::string("an ") + to_string(owner) +
                                 " migration has an empty name");
        if (is_blank(m.sql)) throw MigrationError(describe(m.name, owner) + " is empty");
        if (m.sql.find('\0') != std::string::npos)
            throw MigrationError(describe(m.name, owner) +
                                 " contains a NUL byte (PostgreSQL would stop reading there)");
        auto [it, inserted] = seen.emplace(m.name, owner);
        if (!inserted) {
            if (it->second == MigrationOwner::exo && owner == MigrationOwner::application)
                throw MigrationError("application migration " + m.name +
                                     " has the name of one of exo's own migrations: rename it "
                                     "(a name is a migration's identity, across exo's and the "
                                     "application's)");
            throw MigrationError("two " + std::string(to_string(owner)) + " migrations are named " +
                                 m.name + ": a name is a migration's identity and must be unique");
        }
        plan.push_back({m, owner, sha256_hex(m.sql)});
    };
    for (const auto& m : framework) add(m, MigrationOwner::exo);
    for (const auto& m : sorted) add(m, MigrationOwner::application);
    return plan;
}

MigrationStatus compare_with_recorded(const std::vector<PlannedMigration>& plan,
                                      const std::vector<RecordedMigration>& recorded) {
    std::map<std::string, std::optional<std::string>> by_name;
    for (const auto& r : recorded) by_name.emplace(r.name, r.checksum);
    MigrationStatus status;
    std::string changed;
    for (const auto& p : plan) {
        auto it = by_name.find(p.migration.name);
        if (it == by_name.end()) {
            status.pending.push_back(p.migration.name);
        } else if (!it->second) {
            status.unverified.push_back(p.migration.name);
        } else if (*it->second != p.checksum) {
            changed += (changed.empty() ? "applied " : "; applied ") +
                       describe(p.migration.name, p.owner) +
                       " was changed since: recorded checksum " + *it->second +
                       ", its text now has " + p.checksum;
        }
    }
    if (!changed.empty())
        throw MigrationError(changed +
                             ". An applied migration must not be edited: restore the text it "
                             "was applied with and add a new migration for the change");
    return status;
}

std::vector<std::string> apply_migrations(pqxx::connection& connection,
                                          const std::vector<Migration>& application) {
    auto plan = plan_migrations(framework_migrations(), application);
    MigrationLock lock(connection);
    ensure_table(connection, lock);
    MigrationStatus status;
    {
        pqxx::nontransaction tx(connection);
        auto recorded = read_recorded(tx).value();
        lock.check_held();
        status = compare_with_recorded(plan, recorded);
    }
    record_missing_checksums(connection, lock, plan, status.unverified);
    std::set<std::string> pending(status.pending.begin(), status.pending.end());
    std::vector<std::string> applied_now;
    for (const auto& p : plan) {
        if (!pending.contains(p.migration.name)) continue;
        apply_one(connection, lock, p, applied_now.size());
        applied_now.push_back(p.migration.name);
    }
    return applied_now;
}

std::vector<std::string> pending_migrations(pqxx::connection& connection,
                                            const std::vector<Migration>& application) {
    auto plan = plan_migrations(framework_migrations(), application);
    pqxx::nontransaction tx(connection);
    auto recorded = read_recorded(tx);
    return compare_with_recorded(plan, recorded.value_or(std::vector<RecordedMigration>{})).pending;
}

}  // namespace exo
