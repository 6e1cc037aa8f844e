#include "pg/process_identity.hpp"

#include <unistd.h>

#include <pqxx/nontransaction>

namespace exo {

const std::string& process_identity() {
    static const std::string identity = [] {
        char host[256] = {0};
        if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        return std::string(host[0] != '\0' ? host : "unknown-host") + "/" +
               std::to_string(::getpid()) + "/exo-" + EXO_VERSION;
    }();
    return identity;
}

int register_process(pqxx::connection_base& connection) {
    // The row is read first, so only a process's first connection writes. Two
    // first connections at once: the second's insert waits for the first's
    // and then takes its row (DO UPDATE returns it; DO NOTHING would return
    // nothing, and a re-read in this statement's snapshot would not see it).
    pqxx::nontransaction tx(connection);
    const auto r = tx.exec_params(
        "WITH found AS (SELECT id FROM exo_processes WHERE identity = $1),"
        " ins AS (INSERT INTO exo_processes (identity) SELECT $1"
        " WHERE NOT EXISTS (SELECT 1 FROM found)"
        " ON CONFLICT (identity) DO UPDATE SET identity = EXCLUDED.identity RETURNING id)"
        " SELECT id FROM found UNION ALL SELECT id FROM ins",
        process_identity());
    return r.at(0).at(0).as<int>();
}

}  // namespace exo
