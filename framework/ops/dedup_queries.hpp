#pragma once
// The operator commands' SQL on exo's tables: reading dedup rows, sequences and
// dead letters, and the two writes of a replay (docs/operations.md). Each
// function runs its own short transaction on `connection`; none may be called
// inside another transaction. Throws pqxx exceptions.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/connection>

#include "ops/ops_records.hpp"
#include "ops/unsettled_letters.hpp"

namespace exo {

std::optional<DedupRow> find_dedup_row(pqxx::connection& connection, const std::string& group,
                                       const std::string& key);

std::optional<ReplayTicket> find_replay_ticket(pqxx::connection& connection,
                                               const std::string& group, const std::string& key);

// (last_sequence) of (handler, entity), nullopt if the entity has none yet.
std::optional<std::int64_t> find_last_sequence(pqxx::connection& connection,
                                               const std::string& handler,
                                               const std::string& entity);

// DEAD_LETTERED rows, then replays whose record the daemon has not processed
// yet, oldest dead letter first. `selection.key` is ignored; topic, partition,
// offset and since (dead-lettered at most this long ago) narrow the list.
std::vector<DeadLetterEntry> list_dead_letters(pqxx::connection& connection,
                                               const std::string& group,
                                               const DeadLetterSelection& selection);

// Replay, step 1, in one statement: moves the key's DEAD_LETTERED row into a
// replay ticket (replacing a finished ticket of an earlier replay), so the key is
// new to the daemon again. False if the key has no DEAD_LETTERED row (any more).
bool open_replay_ticket(pqxx::connection& connection, const std::string& group,
                        const std::string& key);

// What the group's tables say about the keys of `letters` (their dedup rows'
// outcomes, their tickets) and which keyless letters' records have a ticket.
LetterStates find_letter_states(pqxx::connection& connection, const std::string& group,
                                const std::vector<LetterView>& letters);

// Replay, step 1 for a dead letter without a dedup row (`letter`: a no_dedup_row
// or no_key entry; `key`: the key its record derives), in one statement: opens
// a replay ticket for it unless the key has a dedup row (then the row decides:
// nothing to replay) or already a ticket for these very coordinates (another
// replay opened it). An older ticket, whose replayed copy was dead-lettered
// again, is replaced. False if nothing was opened.
bool open_letter_ticket(pqxx::connection& connection, const std::string& group,
                        const std::string& key, const DeadLetterEntry& letter);

// Replay, last step: Kafka acknowledged the re-produced record at `produced_to`.
void mark_replay_produced(pqxx::connection& connection, const std::string& group,
                          const std::string& key, const std::string& produced_to);

}  // namespace exo
