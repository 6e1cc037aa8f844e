#pragma once
// PostgreSQL round trips counted where they happen: this executable interposes
// libpq's four send functions (PQsendQuery, PQsendQueryParams,
// PQsendQueryPrepared, PQsendPrepare), which every synchronous libpq call
// (PQexec, PQexecPrepared, ...) goes through, and calls the real ones found
// with dlsym(RTLD_NEXT). One send = one round trip (no libpq pipeline mode is
// used). It counts every connection of the process, so a scenario reads the
// difference over a window in which only the code under test talks to
// PostgreSQL. This checks PipelineStats::postgres_round_trips independently.
//
// The symbols are exported from the executable (bench/CMakeLists.txt) so that
// libpqxx's and libpq's own calls resolve to them.
#include <cstdint>

namespace exo::bench {

// Sends so far, all threads (relaxed atomic).
std::uint64_t postgres_sends();

}  // namespace exo::bench
