#pragma once
// What a connection that runs records must have prepared: the framework's
// statements (pg: the dedup row, the sequence check) and the outbox writer's
// (outbox: emits). pg sits below outbox, so neither can prepare the other's;
// this is the one place that pairs them. Every connection records run on (a
// worker's session, the handler kit, the bench, the passes test) is prepared
// here, so none forgets one half (a missing statement fails only when a record
// first needs it).
#include <pqxx/connection_base>

namespace exo {

// Prepares both on `connection`, once per connection (before any handler's
// prepare()). Throws pqxx exceptions (classify with classify_pg_error).
void prepare_record_connection(pqxx::connection_base& connection);

}  // namespace exo
