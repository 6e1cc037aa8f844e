#pragma once
// The operator's side of exo_outbox (`exo outbox list|discard|reroute`,
// docs/outbox.md "Rows that cannot be published"): the units whose head keeps
// failing, and taking such a head out of its unit, dropped or sent to another
// topic, so the key's later rows go on. Each function opens its own
// transaction on `pg` and throws pqxx exceptions, or OutboxAdminRefused.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/connection>

namespace exo {

// The row cannot be taken out now, and why (not pending, not its unit's head,
// another group's, held by a relay publishing it this very moment).
class OutboxAdminRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct OutboxProblemRow {
    std::int64_t id = 0;  // the failing head row
    std::string group;    // "" : written before rows had a group (no relay publishes it)
    std::string topic;
    std::optional<std::string> key;  // printable
    std::string message_id;
    std::int64_t value_bytes = 0;
    std::int64_t waiting_behind = 0;  // the unit's later pending rows
    int failures = 0;                 // in a row; 0 for an unassigned row
    std::string reason;
    std::string first_failed_at, next_attempt_at;  // ISO 8601, "" for an unassigned row
};

// The parked units of `group` (head row, reason, failures), then the pending
// heads of rows without a group (at most `limit` of each).
std::vector<OutboxProblemRow> list_outbox_problems(pqxx::connection& pg, const std::string& group,
                                                   int limit);

// Deletes pending row `id`, which must be the head of its unit in `group` or
// unassigned (group ""), and forgets its unit's failures: the unit's next row
// is published next. Returns the row as it was.
OutboxProblemRow discard_outbox_row(pqxx::connection& pg, const std::string& group,
                                    std::int64_t id);

// Moves pending row `id` (same rule) to `topic`: written as a new row of
// `group` (a new exo-outbox-id) at the end of (topic, its key), with its key,
// value and headers, and the original deleted, in one transaction.
// `max_message_bytes` is the emit check's limit. Returns the original row.
OutboxProblemRow reroute_outbox_row(pqxx::connection& pg, const std::string& group, std::int64_t id,
                                    const std::string& topic, std::size_t max_message_bytes);

}  // namespace exo
