#pragma once
// Versioned schema migrations: the files of sql/, embedded in the binary and
// applied in name order, each in its own transaction, recorded in
// exo_schema_migrations. Concurrent `exo migrate` runs serialize on an
// advisory lock. Throws pqxx exceptions on failure (nothing half-applied: each
// file is one transaction).
#include <string>
#include <vector>

#include <pqxx/connection>

namespace exo {

// Applies what is missing; returns the names applied now (empty: up to date).
std::vector<std::string> apply_migrations(pqxx::connection& connection);
// Names of embedded migrations not yet applied.
std::vector<std::string> pending_migrations(pqxx::connection& connection);

}  // namespace exo
