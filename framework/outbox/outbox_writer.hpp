#pragma once
// The write side of the outbox: a handler run's emitted records inserted into
// exo_outbox in its own transaction, in ONE statement, with a NOTIFY that
// wakes the relays when (and only if) the transaction commits.
//
// Ordering (docs/outbox.md): each record draws the next `seq` of its (group,
// topic, key) from exo_outbox_keys, whose row stays locked by this transaction until
// it ends, so a second transaction emitting to the same key waits for this one
// and numbers its records after ours: the committed rows of a key are numbered
// in commit order without gaps. The keys are locked in one global order
// (topic, sha256 of key), so two transactions emitting to several keys do not
// deadlock on them.
//
// Errors: pqxx exceptions, classified like the handler's own statements
// (classify_pg_error): a lock wait past lock_timeout is contention, a deadlock
// or lost connection retryable.
#include <span>
#include <string>

#include <pqxx/connection_base>
#include <pqxx/transaction_base>

#include <exo/outbox.hpp>

namespace exo {

// The channel the writer NOTIFYs and the relay LISTENs on.
inline constexpr const char* kOutboxChannel = "exo_outbox";

// Prepares the writer's statement on a connection (every connection that runs
// records does, beside prepare_framework_statements).
void prepare_outbox_statements(pqxx::connection_base& connection);

// Inserts `messages` (already checked: outbox_message_problem) in order, as
// rows of `group` (kafka.group_id: only that group's relays publish them, with
// its brokers and credentials). Does nothing for none. One round trip.
void write_outbox(pqxx::transaction_base& tx, const std::string& group,
                  std::span<const OutboxMessage> messages);

}  // namespace exo
