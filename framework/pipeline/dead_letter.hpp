#pragma once
// The dead-letter record (DESIGN.md section 6): the original key, value and
// headers, plus why and where from. Pure: producing it is the worker's job.
#include <string>

#include "kafka/producer.hpp"
#include "pipeline/pending_record.hpp"

namespace exo {

// Headers added: exo-error, exo-attempts, exo-original-topic,
// exo-original-partition, exo-original-offset and, when known, exo-idempotency-key.
OutgoingRecord make_dead_letter(const PendingRecord& pending, const std::string& dlq_topic,
                                const std::string& error, const std::string& idempotency_key);

}  // namespace exo
