#include "protocol/steps/keys.hpp"

#include <functional>
#include <string_view>
#include <unordered_map>

#include <exo/errors.hpp>
#include "core/key_derivation.hpp"
#include "core/record_fingerprint.hpp"

namespace exo {

namespace {

const BindingConfig* binding_for(const std::vector<BindingConfig>& bindings,
                                 const std::string& topic) {
    for (const auto& b : bindings)
        if (b.topic == topic) return &b;
    return nullptr;
}

// The key step with `binding_of` a record's topic's binding (nullptr: none).
void key_step(Batch& batch,
              const std::function<const BindingConfig*(const std::string&)>& binding_of,
              std::chrono::milliseconds no_binding_delay) {
    // The first record of each key; keys live in their records, which the batch
    // never moves.
    std::unordered_map<std::string_view, const BatchRecord*> first_copies;
    for (auto& record : batch) {
        if (!record.is_pending()) continue;
        const auto& r = record.pending.record;
        record.binding = binding_of(r.topic.value);
        if (record.binding == nullptr) {
            // Subscribed topics come from the bindings, so this is a bug, not bad input.
            record.requeue(no_binding_delay, "no binding for topic " + r.topic.value);
            batch.hold_behind(record);
            continue;
        }
        try {
            record.key = derive_idempotency_key(record.binding->key, r, record.payload);
        } catch (const PermanentError& e) {
            // No storable key: nothing to claim or record, so such a dead letter
            // is at-least-once (a redelivery before the offset commits repeats it).
            // A verdict the record came with (its headers dropped for being too
            // many, which a key from a header then misses) says why, not this.
            const auto& carried = record.pending.dead_letter;
            record.dead_letter(carried ? carried->reason : e.what(), /*record_key=*/false,
                               carried && carried->clears_gap);
            continue;
        }
        // on_key_reuse: ignore compares nothing, so nothing is computed or kept.
        if (record.binding->on_key_reuse != KeyReusePolicy::ignore) {
            try {
                record.fingerprint = record_fingerprint(record.binding->key, r.value, record.key);
            } catch (const PermanentError&) {
                // The key was derived from the same text, so not expected; without
                // a fingerprint the record is never taken for a reused key.
                record.fingerprint.clear();
            }
        }
        // One claim per key per batch: a later copy claims nothing and runs no
        // handler; it ends as the first copy did (settle_repeated_keys), and the
        // records behind it go on.
        const auto [first, inserted] = first_copies.try_emplace(record.key, &record);
        if (!inserted) record.await_first(*first->second);
    }
}

}  // namespace

void key_step(Batch& batch, const std::vector<BindingConfig>& bindings,
              std::chrono::milliseconds no_binding_delay) {
    key_step(
        batch, [&](const std::string& topic) { return binding_for(bindings, topic); },
        no_binding_delay);
}

void key_step(Batch& batch, const BindingConfig& binding) {
    key_step(
        batch, [&](const std::string&) { return &binding; }, std::chrono::milliseconds(0));
}

}  // namespace exo
