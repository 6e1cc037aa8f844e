#include "ops/sequence_advance.hpp"

#include <pqxx/pqxx>

#include <exo/errors.hpp>
#include "pg/process_identity.hpp"

namespace exo {

const char* to_string(SequenceAdvanceResult::Status status) {
    switch (status) {
        case SequenceAdvanceResult::Status::advanced:
            return "advanced";
        case SequenceAdvanceResult::Status::would_advance:
            return "would advance";
        case SequenceAdvanceResult::Status::unchanged:
            return "unchanged";
    }
    return "unchanged";
}

SequenceAdvanceResult advance_sequence(pqxx::connection& connection,
                                       const SequenceAdvanceRequest& request) {
    SequenceAdvanceResult result{request.handler,
                                 request.entity,
                                 std::nullopt,
                                 request.to,
                                 SequenceAdvanceResult::Status::unchanged,
                                 std::nullopt};
    pqxx::work tx(connection);
    // FOR UPDATE: the daemon's transactions lock the entity the same way, so the
    // move and a record of the entity applying are serialized, and `from` is the
    // value moved from, not one read before someone else moved it.
    auto current = tx.exec_params(
        "SELECT last_sequence FROM exo_sequences WHERE handler = $1 AND entity = $2 FOR UPDATE",
        request.handler, request.entity);
    if (!current.empty()) result.from = current[0][0].as<std::int64_t>();
    if (result.from && request.to < *result.from)
        throw UsageError("the entity '" + request.entity + "' of handler '" + request.handler +
                         "' is at sequence " + std::to_string(*result.from) +
                         "; moving it back to " + std::to_string(request.to) +
                         " would let sequences it already applied apply again, so exo never "
                         "does; nothing was changed");
    if (result.from && request.to == *result.from) return result;
    if (request.dry_run) {
        result.status = SequenceAdvanceResult::Status::would_advance;
        return result;
    }
    if (result.from) {
        tx.exec_params(
            "UPDATE exo_sequences SET last_sequence = $3, updated_at = now()"
            " WHERE handler = $1 AND entity = $2",
            request.handler, request.entity, request.to);
    } else {
        auto created = tx.exec_params(
            "INSERT INTO exo_sequences (handler, entity, last_sequence) VALUES ($1, $2, $3)"
            " ON CONFLICT DO NOTHING RETURNING 1",
            request.handler, request.entity, request.to);
        if (created.empty())
            throw std::runtime_error("the entity '" + request.entity +
                                     "' got its first sequence while this ran; nothing was "
                                     "changed: run the command again");
    }
    auto audit = tx.exec_params(
        "INSERT INTO exo_sequence_advances (handler, entity, from_sequence, to_sequence, reason,"
        " advanced_by, advanced_from) VALUES ($1, $2, nullif($3, '')::bigint, $4, $5, $6, $7)"
        " RETURNING id",
        request.handler, request.entity, result.from ? std::to_string(*result.from) : std::string(),
        request.to, request.reason, request.by, process_identity());
    tx.commit();
    result.status = SequenceAdvanceResult::Status::advanced;
    result.audit_id = audit[0][0].as<std::int64_t>();
    return result;
}

}  // namespace exo
