#pragma once
// The write side of the outbox: a transaction's emitted records inserted into
// exo_outbox in that transaction, in ONE statement (transaction_outbox.hpp
// decides when). Nothing wakes a relay from here: whoever commits rings its
// relay's doorbell (outbox_doorbell.hpp); a writer outside a daemon calls
// notify_outbox_relays.
//
// Ordering (docs/outbox.md#ordering-commit-order-per-topic-key): each record draws the next `seq`
// of its (group, topic, key) from exo_outbox_keys, whose row stays locked by this transaction until
// it ends, so a second transaction emitting to the same key waits for this one and numbers its
// records after ours: the committed rows of a key are numbered in commit order without gaps. The
// keys are locked in one global order (topic, sha256 of key), so two transactions emitting to
// several keys do not deadlock on them. Records without a key have no order to keep: their unit is
// (group, topic, emitting session), which no other open transaction can hold, so they never wait.
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

// The channel the relay LISTENs on: `exo outbox reroute` and writers of exo
// versions before the doorbell NOTIFY it.
inline constexpr const char* kOutboxChannel = "exo_outbox";

// Prepares the writer's statement on a connection (every connection that runs
// records does, beside prepare_framework_statements).
void prepare_outbox_statements(pqxx::connection_base& connection);

// Inserts `messages` (already checked: outbox_message_problem) in order, as
// rows of `group` (kafka.group_id: only that group's relays publish them, with
// its brokers and credentials). Does nothing for none. One round trip.
void write_outbox(pqxx::transaction_base& tx, const std::string& group,
                  std::span<const OutboxMessage> messages);

// For a writer outside a daemon (no doorbell to ring): NOTIFY the relays, on
// `tx`'s COMMIT. Never on a pipeline transaction (the lock it takes at COMMIT
// serializes the database's commits).
void notify_outbox_relays(pqxx::transaction_base& tx);

}  // namespace exo
