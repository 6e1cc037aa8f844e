#pragma once
// Every PostgreSQL session exo opens: connect and lock timeouts, TCP keepalives,
// and no silent reconnect. Without them a worker waiting on a row lock held by a
// frozen peer, or on a server behind a cut network, waits until the OS gives up
// on the socket (about two hours), and shutdown waits with it.
//
// Where each setting goes:
// - connect_timeout, keepalives*, tcp_user_timeout are socket options: they go
//   into the conninfo (postgres_conninfo).
// - statement_timeout, lock_timeout and idle_in_transaction_session_timeout are
//   server settings: set_config() in one statement right after connecting, not
//   the `options` startup parameter. Why: a pooler such as PgBouncer refuses
//   `options` (or, told to ignore it, drops it silently, and the limits would be
//   off unnoticed), while a session-level SET passes any pooler exo can use at
//   all (exo prepares statements per session, so it needs session pooling). And
//   an `options` in the conninfo would silently replace the user's PGOPTIONS or
//   service-file options. The cost is one round trip per connection.
// - A setting the user made wins: a parameter already in postgres.uri is left
//   as it is, and a timeout the session got from the startup packet (the uri's
//   own `options=-c ...`, PGOPTIONS, a service file) is not SET again.
#include <memory>
#include <string>

#include <pqxx/connection>

#include "config/config.hpp"

namespace exo {

// config.uri with connect_timeout, keepalives=1, keepalives_idle,
// keepalives_interval, keepalives_count and tcp_user_timeout added, each unless
// the uri names it already or config gives 0 (then libpq's default, the OS's,
// applies). A URI ("postgresql://" or "postgres://") gets them as query
// parameters; a key=value string gets them appended as key='value'. The rest of
// the uri is kept byte for byte. Pure: no I/O, no environment.
std::string postgres_conninfo(const PostgresConfig& config);

// A connected session with the settings above, reactivation inhibited: once the
// connection breaks (server gone, backend terminated, idle-in-transaction
// timeout) every later statement on it throws pqxx::broken_connection. libpqxx
// 6.4 would otherwise reconnect by itself on the next statement, and a handler
// that swallowed the first error would go on in autocommit on a new session,
// outside the batch's transaction. Reconnecting is the owner's decision: open a
// new session.
//
// Throws pqxx::broken_connection when the server cannot be reached, refuses the
// login, or the connection breaks while the settings are applied; other pqxx
// exceptions if the server rejects a setting. What the caller does next is
// decided by classify_pg_error (pg/pg_errors.hpp), not here.
// Thread-safety: the returned connection is for one thread at a time, as any
// pqxx::connection.
std::unique_ptr<pqxx::connection> open_postgres_session(const PostgresConfig& config);

}  // namespace exo
