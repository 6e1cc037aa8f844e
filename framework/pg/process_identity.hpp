#pragma once
// Who this process is, for the dedup rows it writes (exo_processed.applied_by)
// and the replays it asks for: "<host>/<pid>/exo-<version>", e.g.
// "host-a/12345/exo-0.2.0". An operator reading `exo inspect` can then find the
// process (and its log) that decided a key.
#include <string>

namespace exo {

// Computed on first use and then fixed for the life of the process.
// Thread-safe (a function-local static).
const std::string& process_identity();

}  // namespace exo
