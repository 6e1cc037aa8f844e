#pragma once
// The sequence decisions of a whole transaction's records at once (
// docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based), the rule alone. The
// per-record path asks PostgreSQL one record at a time; the set-based start of a transaction's
// records (pg/record_start.hpp) reads every entity's last sequence once, plans here, and writes the
// outcome once. The plan is a fold of decide_sequence() over the records in the order the
// per-record path would run them, so both paths reach the same verdicts by construction: several
// records of one entity advance it one after another, a record equal to or older than what an
// earlier one applied is stale, and a strict record whose predecessor has not been applied yet is a
// gap without holding back the later records of its entity (a predecessor behind it may still
// apply).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/sequence_decision.hpp"

namespace exo {

struct PlannedRecord {
    std::size_t entity = 0;  // index into the `last` vector given to plan_sequences
    SequenceMode mode = SequenceMode::strict;
    std::int64_t sequence = 0;
};

struct SequencePlan {
    std::vector<SequenceVerdict> verdicts;  // one per record, in the records' order
    // Each entity's last sequence after the records: a moved entity must be
    // written; nullopt stays a new entity that nothing was applied to.
    std::vector<std::optional<std::int64_t>> last;
    std::vector<bool> moved;  // per entity: some record applied
};

// `last[e]` is entity e's last applied sequence before the records, nullopt for
// an entity that has none. `records` are in partition order. Pure; never throws
// except std::out_of_range for an entity index outside `last`.
inline SequencePlan plan_sequences(std::vector<std::optional<std::int64_t>> last,
                                   const std::vector<PlannedRecord>& records) {
    SequencePlan plan;
    plan.moved.assign(last.size(), false);
    plan.verdicts.reserve(records.size());
    for (const auto& r : records) {
        auto& entity_last = last.at(r.entity);
        const auto verdict = decide_sequence(r.mode, entity_last, r.sequence);
        if (verdict == SequenceVerdict::apply) {
            entity_last = r.sequence;
            plan.moved[r.entity] = true;
        }
        plan.verdicts.push_back(verdict);
    }
    plan.last = std::move(last);
    return plan;
}

}  // namespace exo
