#pragma once
// The dead-letter record (docs/design.md#failure-matrix): the original key, value and
// headers, plus why and where from. Pure: producing it is the worker's job.
#include <cstddef>
#include <string>

#include "kafka/producer.hpp"
#include "scheduling/pending_record.hpp"

namespace exo {

// The longest exo-error header, in bytes: an exception text can be arbitrarily
// long (a handler may put a payload in it), and every byte counts against the
// DLQ topic's message size limit.
inline constexpr std::size_t kMaxDeadLetterReasonBytes = 2048;

// A dead letter's shape, from the whole record down to what always fits: exo picks
// the first whose letter fits the producer's message.max.bytes before producing
// (fitting_dead_letter_shape), and the next one when a broker still refuses it.
// Each shape past `original` leaves the value out: the source topic keeps it at
// the letter's coordinates, where replay reads it.
enum class DeadLetterShape {
    original,  // the original key, value and headers, as consumed
    // Header exo-value-omitted holds the value's size in bytes.
    value_omitted,
    // The value left out, and a key or header over kMaxKeptDeadLetterBytes replaced by its
    // size and SHA-256 (omitted_bytes_text): the key by a null key and header exo-key-omitted,
    // a header by exo-header-omitted, in its place: "<name>: <size> bytes sha256:<hex>".
    digested,
    // The value left out, a key over kMaxKeptDeadLetterBytes as in `digested`, and all the
    // record's headers replaced by one, exo-headers-omitted: "<count> headers, <size> bytes
    // sha256:<hex>" (of the names and values, each as its size in decimal, ':', its bytes).
    // What is left is exo's headers, each bounded: it fits any usable limit.
    headers_omitted,
};

// The largest key or header (name and value) a `digested` letter keeps as it is.
inline constexpr std::size_t kMaxKeptDeadLetterBytes = 1024;

// The record's headers are copied, those named exo-* (but exo-replayed-from)
// renamed exo-received-<name> (core/exo_headers.hpp): the letter carries one of
// each header below, exo's. Headers added: exo-error (valid UTF-8, at most
// kMaxDeadLetterReasonBytes), exo-attempts, exo-original-topic, exo-original-partition,
// exo-original-offset, exo-consumer-group (several groups consuming one topic share its default
// dead-letter topic, and `exo dlq list` shows a group only its own letters),
// exo-idempotency-key when known (at most kMaxStoredKeyBytes), exo-value-omitted,
// exo-key-omitted and exo-headers-omitted as `shape` says, exo-headers-omitted (their
// count) too when the record's headers were dropped for being over
// pipeline.max_headers_per_record (record_limits.hpp: none is left to copy), and the
// record's trace (pending.trace): exo-traceparent always, traceparent too when the
// record had none (core/trace_context.hpp).
OutgoingRecord make_dead_letter(const PendingRecord& pending, const std::string& dlq_topic,
                                const std::string& consumer_group, const std::string& error,
                                const std::string& idempotency_key,
                                DeadLetterShape shape = DeadLetterShape::original);

// The first shape from `from` on whose letter is at most `max_message_bytes` as
// librdkafka counts it (outbox_wire_size, which counts one header more than a
// letter has: a margin), or DeadLetterShape::headers_omitted when none is.
DeadLetterShape fitting_dead_letter_shape(
    const PendingRecord& pending, const std::string& dlq_topic, const std::string& consumer_group,
    const std::string& error, const std::string& idempotency_key, std::size_t max_message_bytes,
    DeadLetterShape from = DeadLetterShape::original);

}  // namespace exo
