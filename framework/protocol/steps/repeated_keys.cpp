#include "protocol/steps/repeated_keys.hpp"

#include "core/record_fingerprint.hpp"

namespace exo {

void settle_repeated_keys(Batch& batch) {
    for (auto& record : batch) {
        const auto* awaits = std::get_if<fate::AwaitsFirst>(&record.fate());
        if (awaits == nullptr) continue;
        const auto& first = *awaits->first;
        const auto reuse = key_reuse_verdict(first.stored_fingerprint(), record.fingerprint,
                                             record.binding->on_key_reuse);
        if (first.settled_key() && (reuse == KeyReuse::none || reuse == KeyReuse::ignore))
            record.finish_duplicate(Outcome::duplicate_in_batch, first.stored(), first.result(),
                                    first.stored_fingerprint());
        else if (first.settled_key())
            record.requeue(std::chrono::milliseconds(0),
                           "its payload differs from the first copy's of its key in the batch; "
                           "its next claim decides (on_key_reuse)");
        else
            record.requeue(std::chrono::milliseconds(0),
                           "the first copy of its key in the batch did not finish");
    }
}

}  // namespace exo
