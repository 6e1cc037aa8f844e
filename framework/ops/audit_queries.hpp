#pragma once
// `exo audit`'s reads of exo_processed. Each function runs its own read-only
// transaction on `connection`; none may be called inside another transaction.
// Throws pqxx exceptions (pqxx::broken_connection when PostgreSQL is down).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <pqxx/connection>

#include "ops/audit_verdict.hpp"

namespace exo {

// The group's dedup rows of `keys` (a chunk of records' keys: one statement,
// `= ANY($2)` on the primary key). Keys must be PostgreSQL text (stored keys are).
std::vector<AuditRow> find_audit_rows(pqxx::connection& connection, const std::string& group,
                                      const std::vector<std::string>& keys);

// Every dedup row of the group whose coordinates lie in [from, to] of
// topic/partition, handed to `each` through a cursor, `page` rows at a time:
// memory is one page whatever the table holds. No index covers coordinates, so
// this is one sequential scan of the group's rows per call.
void scan_audit_rows(pqxx::connection& connection, const std::string& group,
                     const std::string& topic, int partition, std::int64_t from, std::int64_t to,
                     std::size_t page, const std::function<void(const AuditRow&)>& each);

}  // namespace exo
