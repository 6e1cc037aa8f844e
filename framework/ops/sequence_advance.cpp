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
        case SequenceAdvanceResult::Status::rewound:
            return "rewound";
        case SequenceAdvanceResult::Status::would_rewind:
            return "would rewind";
        case SequenceAdvanceResult::Status::unchanged:
            return "unchanged";
    }
    return "unchanged";
}

namespace {

std::string entity_text(const SequenceAdvanceRequest& request) {
    return "the entity '" + request.entity + "' of handler '" + request.handler + "'";
}

// The audit row of a move either way: who, from which process, from, to, why.
std::int64_t audit_move(pqxx::work& tx, const SequenceAdvanceRequest& request,
                        const std::optional<std::int64_t>& from) {
    auto audit = tx.exec_params(
        "INSERT INTO exo_sequence_advances (handler, entity, from_sequence, to_sequence, reason,"
        " advanced_by, advanced_from) VALUES ($1, $2, nullif($3, '')::bigint, $4, $5, $6, $7)"
        " RETURNING id",
        request.handler, request.entity, from ? std::to_string(*from) : std::string(), request.to,
        request.reason, request.by, process_identity());
    return audit[0][0].as<std::int64_t>();
}

// The rewind after the entity's row is locked: only an existing sequence, only
// down, audited in the same transaction as the move.
SequenceAdvanceResult rewind(pqxx::work& tx, const SequenceAdvanceRequest& request,
                             SequenceAdvanceResult result) {
    if (!result.from)
        throw UsageError(entity_text(request) +
                         " has no sequence: there is nothing to rewind; nothing was changed");
    if (request.to > *result.from)
        throw UsageError(entity_text(request) + " is at sequence " + std::to_string(*result.from) +
                         "; moving it to " + std::to_string(request.to) +
                         " is forward: use `exo sequence advance`; nothing was changed");
    if (request.to == *result.from) return result;
    if (request.dry_run) {
        result.status = SequenceAdvanceResult::Status::would_rewind;
        return result;
    }
    tx.exec_params(
        "UPDATE exo_sequences SET last_sequence = $3, updated_at = now()"
        " WHERE handler = $1 AND entity = $2",
        request.handler, request.entity, request.to);
    result.audit_id = audit_move(tx, request, result.from);
    tx.commit();
    result.status = SequenceAdvanceResult::Status::rewound;
    return result;
}

}  // namespace

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
    // value moved from, not one read before someone else moved it. A rewind
    // does not wait (NOWAIT): a held row is a record of the entity being
    // applied right now, and the sequence it applies is the one to rewind from.
    pqxx::result current;
    try {
        current = tx.exec_params(
            std::string("SELECT last_sequence FROM exo_sequences WHERE handler = $1 AND entity = "
                        "$2 FOR UPDATE") +
                (request.backward ? " NOWAIT" : ""),
            request.handler, request.entity);
    } catch (const pqxx::sql_error& e) {
        if (!request.backward || e.sqlstate() != "55P03") throw;
        throw std::runtime_error(
            entity_text(request) +
            " is locked by another transaction (a record of it being applied, or an operator's "
            "session): nothing was changed; stop what moves it, or run the command again");
    }
    if (!current.empty()) result.from = current[0][0].as<std::int64_t>();
    if (request.backward) return rewind(tx, request, std::move(result));
    if (result.from && request.to < *result.from)
        throw UsageError(entity_text(request) + " is at sequence " + std::to_string(*result.from) +
                         "; moving it back to " + std::to_string(request.to) +
                         " would let sequences it already applied apply again, so `advance` "
                         "never does (`exo sequence rewind` does, audited); nothing was changed");
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
    result.audit_id = audit_move(tx, request, result.from);
    tx.commit();
    result.status = SequenceAdvanceResult::Status::advanced;
    return result;
}

}  // namespace exo
