// The key pass (pipeline/passes/keys.hpp) and the batch it works on, without
// servers: which records go on to their claims, and which wait.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "pipeline/batch.hpp"
#include "pipeline/passes/keys.hpp"

using namespace std::chrono_literals;

namespace {

exo::PendingRecord record(const std::string& topic, int partition, const std::string& event) {
    exo::PendingRecord p;
    p.record.topic = exo::Topic{topic};
    p.record.partition = exo::Partition{partition};
    p.record.value = "{\"eventId\":\"" + event + "\"}";
    return p;
}

std::vector<exo::BindingConfig> bindings() {
    exo::BindingConfig b;
    b.topic = "payments";
    b.handler = "ledger";
    b.key = {exo::KeySourceKind::json, "/eventId"};
    return {b};
}

}  // namespace

TEST_CASE(
    "the key pass sends a key seen twice in one batch, and the rest of its partition, to the "
    "next batch, dead-letters a record without a key, and lets other partitions go on") {
    std::vector<exo::PendingRecord> taken;
    taken.push_back(record("payments", 0, "a"));
    taken.push_back(record("payments", 0, "a"));  // the same key again
    taken.push_back(record("payments", 0, "b"));  // behind it in its partition
    taken.push_back(record("payments", 1, "c"));
    taken.push_back(record("payments", 1, ""));  // no storable key
    taken.push_back(record("payments", 1, "d"));
    exo::Batch batch(std::move(taken));
    const auto all = bindings();
    exo::key_pass(batch, all, 5ms);

    std::vector<exo::Fate> fates;
    std::vector<std::string> keys;
    for (const auto& r : batch) {
        fates.push_back(r.fate);
        keys.push_back(r.key);
    }
    using F = exo::Fate;
    CHECK(fates == std::vector<F>{F::pending, F::requeue, F::requeue, F::pending, F::dead_letter,
                                  F::pending});
    // b waits behind the repeated key before its own key is derived.
    CHECK(keys == std::vector<std::string>{"a", "a", "", "c", "", "d"});
    CHECK(batch.open_claims().empty());  // nothing claimed yet
}
