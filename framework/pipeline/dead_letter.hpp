#pragma once
// The dead-letter record (docs/design.md section 6): the original key, value and
// headers, plus why and where from. Pure: producing it is the worker's job.
#include <cstddef>
#include <string>

#include "kafka/producer.hpp"
#include "pipeline/pending_record.hpp"

namespace exo {

// The longest exo-error header, in bytes: an exception text can be arbitrarily
// long (a handler may put a payload in it), and every byte counts against the
// DLQ topic's message size limit.
inline constexpr std::size_t kMaxDeadLetterReasonBytes = 2048;

enum class DeadLetterValue {
    original,  // the original value, as consumed
    // Left out: the original plus exo's headers exceed the message size limit.
    // Header exo-value-omitted holds the original size in bytes; the original
    // stays readable at its coordinates in the source topic.
    omitted,
};

// The record's headers are copied, those named exo-* (but exo-replayed-from)
// renamed exo-received-<name> (core/exo_headers.hpp): the letter carries one of
// each header below, exo's. Headers added: exo-error (valid UTF-8, at most
// kMaxDeadLetterReasonBytes), exo-attempts, exo-original-topic, exo-original-partition,
// exo-original-offset, exo-consumer-group (several groups consuming one topic share its default
// dead-letter topic, and `exo dlq list` shows a group only its own letters),
// exo-idempotency-key when known, exo-value-omitted when the value is left out,
// exo-headers-omitted (their count) when the record's headers were dropped for
// being over pipeline.max_headers_per_record (record_limits.hpp: none is copied),
// and the record's trace (pending.trace): exo-traceparent always, traceparent
// too when the record had none (core/trace_context.hpp).
OutgoingRecord make_dead_letter(const PendingRecord& pending, const std::string& dlq_topic,
                                const std::string& consumer_group, const std::string& error,
                                const std::string& idempotency_key,
                                DeadLetterValue value = DeadLetterValue::original);

}  // namespace exo
