#include "protocol/passes/entity_holds.hpp"

namespace exo {

std::string entity_held_reason(const SequenceStep& step) {
    return "sequence entity '" + step.entity + "' of handler '" + step.handler +
           "' is locked by another transaction";
}

std::vector<NamedFailure> put_back_held(Batch& batch, std::vector<HeldRecord> held) {
    std::vector<NamedFailure> nacked;
    for (auto& [record, why] : held) {
        if (!record->is_pending()) continue;  // behind a held record of its lane
        record->requeue(std::chrono::milliseconds(0), why);
        batch.hold_behind(*record);
        nacked.push_back({record, Failure::contention, std::move(why)});
    }
    return nacked;
}

}  // namespace exo
