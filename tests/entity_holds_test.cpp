// put_back_held (protocol/passes/entity_holds.hpp) without servers: which records
// go back when another transaction holds the sequence entity of some.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "protocol/batch.hpp"
#include "protocol/passes/entity_holds.hpp"

namespace {

// Records of "payments", each with the ordering key given (empty keys of a
// partition are one lane, as under ordering: partition), in `partitions`
// (none: all in partition 0).
exo::Batch batch_in_lanes(const std::vector<std::string>& keys,
                          const std::vector<int>& partitions = {}) {
    std::vector<exo::PendingRecord> taken(keys.size());
    for (std::size_t n = 0; n < keys.size(); ++n) {
        taken[n].record.topic = exo::Topic{"payments"};
        taken[n].record.partition = exo::Partition{partitions.empty() ? 0 : partitions[n]};
        taken[n].record.offset = exo::Offset{static_cast<std::int64_t>(n)};
        taken[n].ordering_key = keys[n];
    }
    return exo::Batch(std::move(taken));
}

exo::BatchRecord& at(exo::Batch& batch, std::size_t n) {
    return *(batch.begin() + static_cast<std::ptrdiff_t>(n));
}

std::vector<std::string_view> fates(const exo::Batch& batch) {
    std::vector<std::string_view> out;
    for (const auto& record : batch) out.push_back(exo::fate_name(record.fate()));
    return out;
}

constexpr std::string_view pending = exo::fate::Pending::name;
constexpr std::string_view requeue = exo::fate::Requeue::name;

}  // namespace

TEST_CASE(
    "a record whose entity is held goes back with the later records of its lane only, and a "
    "held record already behind it is not NACKed again") {
    // Lane e: 0 (held), 2, 3 (held too: the same entity later); lanes a and b free.
    auto batch = batch_in_lanes({"e", "a", "e", "e", "b"});
    const auto nacked =
        exo::put_back_held(batch, {{&at(batch, 0), "acc-e held"}, {&at(batch, 3), "acc-e held"}});
    CHECK(fates(batch) == std::vector{requeue, pending, requeue, requeue, pending});
    REQUIRE(nacked.size() == 1);
    CHECK(nacked[0].record == &at(batch, 0));
    CHECK(nacked[0].failure == exo::Failure::contention);
    CHECK(nacked[0].why == "acc-e held");
    // Put back without delay or count: the NACK (FatePolicy::record_failed) is the caller's.
    CHECK(std::get<exo::fate::Requeue>(at(batch, 0).fate()).delay == std::chrono::milliseconds(0));
    CHECK(at(batch, 0).pending.nacks == 0);
    CHECK(at(batch, 0).pending.attempts == 0);
    CHECK(at(batch, 2).why() == "behind a held record of its lane");
}

TEST_CASE(
    "under ordering: partition a record whose entity is held takes every later record of its "
    "partition back with it, and none of another partition or before it") {
    auto batch = batch_in_lanes({"", "", "", "", ""}, {0, 0, 1, 0, 1});
    const auto nacked = exo::put_back_held(batch, {{&at(batch, 1), "held"}});
    CHECK(fates(batch) == std::vector{pending, requeue, pending, requeue, pending});
    CHECK(nacked.size() == 1);
}

TEST_CASE("a held record no longer pending (decided already) is neither put back nor NACKed") {
    auto batch = batch_in_lanes({"e", "e"});
    at(batch, 0).finish(exo::Outcome::applied);
    CHECK(exo::put_back_held(batch, {{&at(batch, 0), "held"}}).empty());
    CHECK(fates(batch) == std::vector{exo::fate::Finished::name, pending});
}

TEST_CASE("the reason a held record goes back names its entity and handler") {
    const std::string handler = "ledger", entity = "acc-7";
    CHECK(exo::entity_held_reason({handler, entity, 3, exo::SequenceMode::strict}) ==
          "sequence entity 'acc-7' of handler 'ledger' is locked by another transaction");
}
