#pragma once
// The key step (docs/design.md#key): each record of a batch gets its
// binding and its idempotency key. A key that cannot be derived is bad input,
// a dead letter; a later copy of a key already in the batch awaits its first
// copy (fate::AwaitsFirst) and is settled with it after the batch
// (repeated_keys.hpp): only the first claims and runs, because complete and
// release act on (key, token), so two records sharing one claim would settle
// each other's. Pure: no I/O.
#include <chrono>
#include <vector>

#include "config/config.hpp"
#include "protocol/batch.hpp"

namespace exo {

// `no_binding_delay`: how long a record of a topic without a binding (a bug:
// topics are subscribed from the bindings) holds its partition.
void key_step(Batch& batch, const std::vector<BindingConfig>& bindings,
              std::chrono::milliseconds no_binding_delay);
// The same with `binding` for every record, whatever its topic (the handler
// test kit's one simulated binding).
void key_step(Batch& batch, const BindingConfig& binding);

}  // namespace exo
