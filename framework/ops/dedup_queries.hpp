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

// Replay, last step: Kafka acknowledged the re-produced record at `produced_to`.
void mark_replay_produced(pqxx::connection& connection, const std::string& group,
                          const std::string& key, const std::string& produced_to);

}  // namespace exo
