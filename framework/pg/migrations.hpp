#pragma once
// Versioned schema migrations: exo's own (the files of sql/, embedded in the
// binary) and then the application's (its migrations directory, or text it
// registers). Each is applied once, in its own transaction together with its
// row in exo_schema_migrations, and never again; the row keeps the SHA-256 of
// its text, so a migration edited after it was applied is refused instead of
// silently diverging from the databases that ran the old text.
//
// exo_schema_migrations (the framework owns it; apply_migrations creates or
// upgrades it in place):
//   name       text PRIMARY KEY   the identity of a migration, across owners
//   applied_at timestamptz        server time of the commit
//   owner      text               'exo' or 'application' (NULL: a row written
//                                 before owners were kept)
//   checksum   text               lowercase hex SHA-256 of the exact bytes of the
//                                 text, equal to PostgreSQL's
//                                 encode(sha256(convert_to(text, 'UTF8')), 'hex')
//                                 for UTF-8 text (NULL: written before checksums
//                                 were kept)
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/connection>

#include <exo/errors.hpp>
#include "core/sha256.hpp"  // sha256_hex: a migration's checksum

namespace exo {

// One migration. The name is its identity and its place in the order
// (e.g. "0001_ledger.sql"); the text may hold several statements and runs in one
// transaction, so it cannot use statements PostgreSQL refuses inside one
// (CREATE INDEX CONCURRENTLY, VACUUM, its own BEGIN/COMMIT).
struct Migration {
    std::string name;
    std::string sql;
};

// A migration set that cannot be applied safely, found before anything is
// applied: a migration changed after it was applied, a duplicate name, an
// application migration reusing a name of exo's, an empty migration, a
// migrations directory that cannot be read. The fix is in the migrations or the
// configuration, not in retrying: exit code 2.
class MigrationError : public UsageError {
public:
    using UsageError::UsageError;
};

// One migration's SQL failed (or its COMMIT's answer was lost). Its transaction
// is rolled back (or its outcome unknown: running `exo migrate` again finds it
// recorded or applies it); the ones before it stay applied. what() names the
// migration and carries PostgreSQL's message. A run-time failure: exit code 1.
class MigrationFailed : public std::runtime_error {
public:
    MigrationFailed(std::string name, const std::string& message)
        : std::runtime_error(message), name_(std::move(name)) {}
    const std::string& name() const { return name_; }

private:
    std::string name_;
};

// The *.sql files of `dir` (regular files, or links to them, whose name ends in
// exactly ".sql" and does not start with '.'; everything else is ignored), in
// name order (bytewise). Throws MigrationError naming the path for a missing or
// unreadable directory, an unreadable file, or a file that is empty or only
// whitespace.
std::vector<Migration> read_migrations_dir(const std::string& dir);

// Applies every migration not yet recorded: exo's embedded ones in name order,
// then `application` sorted by name (so an application migration may rely on
// every table of exo's, whatever its name).
//
// - Identity is the name alone, whatever the owner: a migration recorded under
//   a name is applied, even if it was recorded as the other owner's.
// - Before applying anything, the checksum of every recorded migration in the
//   set is compared with its text: one mismatch (all are named) is a
//   MigrationError and nothing is applied. A recorded row without a checksum (a
//   database migrated before checksums were kept) is trusted, and its checksum
//   and owner are recorded now, so it is verified from then on.
// - Recorded names not in the set (an older binary, a removed migration) are
//   left alone.
// - Each migration runs in its own transaction with its record row: a failing
//   one is rolled back (MigrationFailed) and the ones before it stay applied.
// - Idempotent: a second run applies nothing and returns an empty list.
// - Concurrency: the whole run holds a session advisory lock of the database,
//   so a second `exo migrate` (from any process) waits for the first, then finds
//   nothing to do. The lock is released on return or throw (or with the session).
//   The connection must not be in a transaction; no lock_timeout should apply to
//   it (the wait for the lock and a long index build are expected).
//
// Returns the names applied now, in the order applied. Throws MigrationError
// (see above; also for an invalid set, see plan_migrations), MigrationFailed,
// and pqxx::broken_connection / pqxx::sql_error for failures around the
// migrations themselves (the lock, the bookkeeping table).
std::vector<std::string> apply_migrations(pqxx::connection& connection,
                                          const std::vector<Migration>& application = {});

// The names, exo's first then the application's (in apply order), that
// apply_migrations would apply. Throws MigrationError for an invalid set or a
// changed recorded migration, like apply_migrations. Read-only: takes no lock
// and creates nothing (a database without exo_schema_migrations has every
// migration pending; one whose table predates checksums is read without them).
std::vector<std::string> pending_migrations(pqxx::connection& connection,
                                            const std::vector<Migration>& application = {});

// ---------------------------------------------------------------------------
// The pure parts of the above, exposed so they are tested without a server.

enum class MigrationOwner { exo, application };
const char* to_string(MigrationOwner owner);  // "exo", "application": the stored owner

struct PlannedMigration {
    Migration migration;
    MigrationOwner owner;
    std::string checksum;  // sha256_hex(migration.sql)
};

// A row of exo_schema_migrations.
struct RecordedMigration {
    std::string name;
    std::optional<std::string> checksum;  // nullopt: recorded before checksums were kept
};

// exo's embedded migrations (sql/*.sql), in name order.
std::vector<Migration> framework_migrations();

// `framework` (kept in its order) then `application` sorted by name, each with
// its owner and checksum. Throws MigrationError for an empty name, an empty (or
// whitespace-only) text, a text containing a NUL byte (libpq would stop there),
// two application migrations with one name, or an application migration named
// like one of exo's.
std::vector<PlannedMigration> plan_migrations(const std::vector<Migration>& framework,
                                              const std::vector<Migration>& application);

// How the recorded rows stand against a plan. Throws MigrationError naming every
// planned migration whose recorded checksum differs from its text's, with both
// checksums and the fix (restore the applied text; put the change in a new
// migration).
struct MigrationStatus {
    std::vector<std::string> pending;     // not recorded, in plan order
    std::vector<std::string> unverified;  // recorded without a checksum, in plan order
};
MigrationStatus compare_with_recorded(const std::vector<PlannedMigration>& plan,
                                      const std::vector<RecordedMigration>& recorded);

}  // namespace exo
