#pragma once
// A binding's sequence check (bindings[].sequence): the vocabulary shared by the
// config, sequence extraction (core/key_derivation.hpp) and the decision
// (core/sequence_decision.hpp).
#include <chrono>
#include <string>

namespace exo {

enum class SequenceMode { latest, strict };

// Whose sequences a binding's entities are (bindings[].sequence.scope).
// `shared`: one sequence per (handler, entity) for every consumer group on the
// database, as exo has always kept them; right when the groups write the same
// handler data (a group replaced by another, two groups feeding one table), so
// a record one group applied is STALE to the other instead of applying twice.
// `group`: this consumer group's own sequences; another group with the same
// handler name on the same database (a test group, a second pipeline) neither
// reads nor moves them. The default is `shared` so that upgrading never splits
// an existing deployment's sequences; a binding asks for `group` explicitly.
enum class SequenceScope { shared, group };

struct SequenceConfig {
    std::string entity_pointer;  // JSON pointer to the entity id (string or integer)
    std::string value_pointer;   // JSON pointer to the sequence number (integer)
    SequenceMode mode = SequenceMode::latest;
    // strict mode: how long a gap is held before dead-lettering
    std::chrono::milliseconds gap_timeout{60000};
    SequenceScope scope = SequenceScope::shared;  // last: brace-initialisers name the others
};

// What stands in exo_sequences.handler for the entities of `handler` (and in
// exo_sequence_advances.handler): the handler name for `shared`, and
// "<handler>@<group>" for `group`. The column keeps its (handler, entity)
// primary key, so an exo older than `scope` keeps running beside a newer one
// during an upgrade on the same rows (it cannot read a config that says
// `scope`, so it never meets a group-scoped binding). The form is one-to-one
// among group-scoped bindings because the config refuses `scope: group` for a
// handler name containing '@'. Pure; never throws but std::bad_alloc.
inline std::string sequence_owner(const std::string& handler, SequenceScope scope,
                                  const std::string& consumer_group) {
    if (scope == SequenceScope::shared) return handler;
    return handler + "@" + consumer_group;
}

}  // namespace exo
