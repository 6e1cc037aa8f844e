#pragma once
// What exo records of each dead letter it writes (sql/0012_dead_letter_digest.sql):
// the SHA-256 of the letter's Kafka key, value and headers, by the dead-lettered record's
// coordinates. `exo dlq replay` re-produces a letter only if its digest is the one
// recorded: whoever can produce to a dead-letter topic can write a letter that
// looks like exo's, with the coordinates and key of a real one and a value of
// their choice, or a new one for `dlq replay --all` to pick up.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/record.hpp>

#include <pqxx/connection>
#include <pqxx/transaction_base>

namespace exo {

// The digest of a letter as produced: SHA-256 (hex) of "k" then the key as
// "<size>:<bytes>" ("-" for no key), "v" then the value as "<size>:<bytes>", and "h"
// then the headers' count and ':', each name and value as "<size>:<bytes>" (a null
// value "-"), so no two letters give the same text. The headers count: replay
// copies a letter's own headers onto the record it re-produces, and a handler may
// read them. Pure; never throws but std::bad_alloc.
std::string dead_letter_digest(const std::optional<std::string>& key, std::string_view value,
                               const std::vector<RecordHeader>& headers);

struct DeadLetterWritten {
    std::string group;
    std::string topic;  // the dead-lettered record's coordinates
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::string key;     // its idempotency key; empty: none (stored NULL)
    std::string digest;  // dead_letter_digest() of the letter as produced
};

// Records (or, for a letter produced again, re-records) a dead letter. In the
// dead-letter step's transaction. Throws pqxx exceptions.
void record_dead_letter(pqxx::transaction_base& tx, const DeadLetterWritten& letter);

// The digest recorded for the group's dead letter of the record at these
// coordinates, or nullopt if exo recorded none (a letter exo never wrote, or one
// written before sql/0012). Throws pqxx exceptions.
std::optional<std::string> recorded_dead_letter_digest(pqxx::connection& connection,
                                                       const std::string& group,
                                                       const std::string& topic,
                                                       std::int32_t partition, std::int64_t offset);

}  // namespace exo
