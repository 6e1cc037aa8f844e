#include "protocol/passes/retry_ladder.hpp"

namespace exo {

Plan first_attempt(std::size_t records, bool solo) {
    Plan plan;
    if (records == 0) return plan;
    plan.next = records == 1 && solo ? Rung::careful : Rung::optimistic;
    return plan;
}

Plan next_attempt(const Attempted& attempted) {
    Plan plan;
    plan.exclusions = attempted.exclusions;
    plan.forget = !attempted.committed;
    plan.nack_held = attempted.entity_held;
    if (attempted.committed) return plan;  // done
    if (attempted.rung == Rung::careful) {
        // Every other failure of a careful attempt is a record's, or fails the
        // batch: what is left is a COMMIT that names no record.
        if (attempted.records == 1) {
            plan.fail_commit = true;
        } else {
            plan.forget = false;  // each_alone forgets the verdicts of the records it reruns
            plan.next = Rung::each_alone;
        }
        return plan;
    }
    if (attempted.outside_failed) {
        // Failed before BEGIN, taken out together: no exclusion of a handler's.
        plan.fail_outside = true;
        plan.next = Rung::optimistic;
        return plan;
    }
    // A named record costs one more optimistic attempt without it, not a
    // savepoint per record. Bounded: a handler that keeps naming records goes careful.
    if (attempted.named && attempted.exclusions < kMaxExclusions) {
        plan.fail_named = true;
        plan.exclusions = attempted.exclusions + 1;
        plan.next = Rung::optimistic;
        return plan;
    }
    plan.next = Rung::careful;
    return plan;
}

}  // namespace exo
