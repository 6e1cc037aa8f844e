#include "pipeline/batch.hpp"

namespace exo {

Batch::Batch(std::vector<PendingRecord> taken) {
    for (auto& r : taken) records_.emplace_back(std::move(r), records_.size());
}

void Batch::hold_behind(const BatchRecord& record) {
    const auto lane = record.pending.lane();
    for (std::size_t j = record.position + 1; j < records_.size(); ++j)
        if (records_[j].fate == Fate::pending && records_[j].pending.lane() == lane)
            records_[j].requeue(std::chrono::milliseconds(0), "behind a held record of its lane");
}

std::vector<TokenRequest> Batch::open_claims() const {
    std::vector<TokenRequest> held;
    for (const auto& record : records_)
        if (record.token) held.push_back({record.key, *record.token});
    return held;
}

}  // namespace exo
