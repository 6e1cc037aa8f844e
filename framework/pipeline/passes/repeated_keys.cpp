#include "pipeline/passes/repeated_keys.hpp"

namespace exo {

void settle_repeated_keys(Batch& batch) {
    for (auto& record : batch) {
        if (record.fate != Fate::awaits_first) continue;
        const auto& first = *record.first_copy;
        if (first.settled_key())
            record.finish_duplicate(Outcome::duplicate_in_batch, first.stored, first.result);
        else
            record.requeue(std::chrono::milliseconds(0),
                           "the first copy of its key in the batch did not finish");
    }
}

}  // namespace exo
