#pragma once
// Who this process is, for the dedup rows it writes and the replays it asks
// for: "<host>/<pid>/exo-<version>", e.g. "host-a/12345/exo-0.2.0". An operator
// reading `exo inspect` can then find the process (and its log) that decided a
// key. Dedup rows carry it as a number, the id of its exo_processes row
// (sql/0011_exo_processes.sql): 4 bytes instead of the text on every row.
#include <string>

#include <pqxx/connection>

namespace exo {

// Computed on first use and then fixed for the life of the process.
// Thread-safe (a function-local static).
const std::string& process_identity();

// The id of process_identity()'s row in exo_processes, inserted when there is
// none (a row that exists is only read, so a connection of a registered
// process writes nothing). One statement, which concurrent callers may run at
// once: each gets the one row. Runs outside any transaction: `connection`
// must not be in one. Throws pqxx exceptions.
int register_process(pqxx::connection_base& connection);

}  // namespace exo
