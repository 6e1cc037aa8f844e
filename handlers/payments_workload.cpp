#include "payments_workload.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <random>

namespace exo {

std::string Payment::json() const {
    return nlohmann::json{{"eventId", event_id},
                          {"accountId", account_id},
                          {"type", type},
                          {"amount", amount},
                          {"sequenceId", sequence_id}}
        .dump();
}

PaymentWorkload generate_payments(const WorkloadOptions& o) {
    PaymentWorkload w;
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int> account(0, std::max(o.accounts, 1) - 1);
    std::uniform_int_distribution<std::int64_t> amount(1, 10000);
    std::uniform_real_distribution<double> unit(0, 1);
    std::map<std::string, std::int64_t> next_sequence;
    std::vector<Payment> originals;
    std::vector<PaymentMessage> replayed;  // cross-partition duplicates, sent last
    bool cross = o.partitions > 1;

    for (int i = 0; i < o.count; ++i) {
        if (!originals.empty() && unit(rng) < o.duplicate_ratio) {
            std::uniform_int_distribution<std::size_t> pick(0, originals.size() - 1);
            PaymentMessage dup{originals[pick(rng)], std::nullopt, true};
            w.duplicates++;
            if (cross && unit(rng) < 0.5) {
                dup.partition = std::uniform_int_distribution<int>(0, o.partitions - 1)(rng);
                replayed.push_back(std::move(dup));
            } else {
                w.messages.push_back(std::move(dup));
            }
            continue;
        }
        Payment p;
        p.account_id = fmt::format("acc-{:04}", account(rng));
        p.event_id = fmt::format("{}-{}-{}", o.event_prefix, o.seed, i);
        p.type = unit(rng) < 0.6 ? "CREDIT" : "DEBIT";
        p.amount = amount(rng);
        p.sequence_id = ++next_sequence[p.account_id];
        w.expected_balances[p.account_id] += p.signed_amount();
        originals.push_back(p);
        w.messages.push_back({std::move(p), std::nullopt, false});
    }
    for (auto& m : replayed) w.messages.push_back(std::move(m));
    w.unique_events = originals.size();
    return w;
}

}  // namespace exo
