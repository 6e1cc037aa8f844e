#include "protocol/batch.hpp"

namespace exo {

Batch::Batch(std::vector<PendingRecord> taken) {
    for (auto& r : taken) records_.emplace_back(std::move(r), records_.size());
}

void Batch::hold_behind(const BatchRecord& record) {
    // Its lane's fields compared in place: a Lane per record would copy strings.
    const auto& held = record.pending;
    for (std::size_t j = record.position + 1; j < records_.size(); ++j) {
        auto& behind = records_[j];
        if (behind.is_pending() && behind.pending.record.partition == held.record.partition &&
            behind.pending.record.topic == held.record.topic &&
            behind.pending.ordering_key == held.ordering_key)
            behind.requeue(std::chrono::milliseconds(0), "behind a held record of its lane");
    }
}

std::vector<TokenRequest> Batch::open_claims() const {
    std::vector<TokenRequest> held;
    for (const auto& record : records_)
        if (record.token) held.push_back({record.key, *record.token});
    return held;
}

}  // namespace exo
