#pragma once
// Sequence-based optimistic concurrency (docs/design.md#postgresql-tables-and-sequences), the
// decision alone. The PostgreSQL statement in pg/framework_statements.cpp applies the same rule
// atomically; this function classifies its answer and is the rule the unit tests pin down.
#include <cstdint>
#include <optional>

#include "core/sequence_config.hpp"

namespace exo {

enum class SequenceVerdict {
    apply,  // advance last_sequence and run the handler
    stale,  // older than (or equal to) what was applied: recorded STALE, no effect
    gap,    // strict mode only: a predecessor is missing; hold and retry
};

// `last` is the entity's last applied sequence, nullopt for a new entity.
// latest: a new entity accepts any first sequence (absolute state may start
// mid-history). strict: a new entity starts at 1, so a delta that overtook its
// predecessors (e.g. a redelivery on another partition) waits for them.
inline SequenceVerdict decide_sequence(SequenceMode mode, std::optional<std::int64_t> last,
                                       std::int64_t incoming) {
    if (!last) {
        if (mode == SequenceMode::latest) return SequenceVerdict::apply;
        last = 0;
    }
    if (incoming <= *last) return SequenceVerdict::stale;
    if (mode == SequenceMode::strict && incoming != *last + 1) return SequenceVerdict::gap;
    return SequenceVerdict::apply;
}

}  // namespace exo
