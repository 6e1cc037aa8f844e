#include "pg/dead_letter_record.hpp"

#include <pqxx/pqxx>

#include "pg/migrations.hpp"  // sha256_hex

namespace exo {
namespace {

void append_sized(std::string& text, std::string_view bytes) {
    text += std::to_string(bytes.size());
    text += ':';
    text += bytes;
}

}  // namespace

std::string dead_letter_digest(const std::optional<std::string>& key, std::string_view value,
                               const std::vector<RecordHeader>& headers) {
    std::string text = "k";
    if (key)
        append_sized(text, *key);
    else
        text += '-';
    text += 'v';
    append_sized(text, value);
    text += 'h' + std::to_string(headers.size()) + ':';
    for (const auto& h : headers) {
        append_sized(text, h.name);
        if (h.value)
            append_sized(text, *h.value);
        else
            text += '-';
    }
    return sha256_hex(text);
}

void record_dead_letter(pqxx::transaction_base& tx, const DeadLetterWritten& letter) {
    tx.exec_params(
        "INSERT INTO exo_dead_letters (consumer_group, topic, kafka_partition, kafka_offset,"
        " idempotency_key, letter_sha256) VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6)"
        " ON CONFLICT (consumer_group, topic, kafka_partition, kafka_offset) DO UPDATE SET"
        " idempotency_key = EXCLUDED.idempotency_key, letter_sha256 = EXCLUDED.letter_sha256,"
        " written_at = now()",
        letter.group, letter.topic, letter.partition, letter.offset, letter.key, letter.digest);
}

std::optional<std::string> recorded_dead_letter_digest(pqxx::connection& connection,
                                                       const std::string& group,
                                                       const std::string& topic,
                                                       std::int32_t partition,
                                                       std::int64_t offset) {
    pqxx::read_transaction tx(connection);
    auto rows = tx.exec_params(
        "SELECT letter_sha256 FROM exo_dead_letters WHERE consumer_group = $1 AND topic = $2"
        " AND kafka_partition = $3 AND kafka_offset = $4",
        group, topic, partition, offset);
    if (rows.empty()) return std::nullopt;
    return rows[0][0].as<std::string>();
}

}  // namespace exo
