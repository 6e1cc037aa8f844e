#include "core/outcome.hpp"

namespace exo {

const char* to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::applied:
            return "applied";
        case Outcome::duplicate_redis:
            return "duplicate_redis";
        case Outcome::duplicate_postgres:
            return "duplicate_postgres";
        case Outcome::duplicate_in_batch:
            return "duplicate_in_batch";
        case Outcome::stale:
            return "stale";
        case Outcome::dead_lettered:
            return "dead_lettered";
    }
    return "unknown";
}

const char* to_sql(StoredOutcome outcome) {
    switch (outcome) {
        case StoredOutcome::applied:
            return "APPLIED";
        case StoredOutcome::stale:
            return "STALE";
        case StoredOutcome::dead_lettered:
            return "DEAD_LETTERED";
    }
    return "APPLIED";
}

std::optional<StoredOutcome> parse_stored_outcome(std::string_view text) {
    for (auto o : {StoredOutcome::applied, StoredOutcome::stale, StoredOutcome::dead_lettered})
        if (text == to_sql(o)) return o;
    return std::nullopt;
}

}  // namespace exo
