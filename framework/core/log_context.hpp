#pragma once
// The record a thread is working on, for its log lines: while a LogContext
// lives, every line this thread logs carries its topic, partition, offset and
// key, and its trace (exo/trace.hpp) when given (the JSON format as fields, the
// text format as "[topic[p]@offset key=k trace=<trace id> span=<span id>]").
//
//   LogContext context(record.topic, record.partition, record.offset, item.key, &trace);
//   log_->warn("attempt {} failed", n);  // ... "offset":42,"key":"k","trace_id":"4bf9..."}
//
// Contexts nest: the innermost one is in force, and destroying it brings back
// the one around it. A context belongs to the thread that made it, and must be
// destroyed on that thread, in reverse order of construction (a scope does this).
// The values are copied: the context does not depend on the record outliving it.
// Pure: no spdlog; logging/ reads current() when it formats a line.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <exo/trace.hpp>
#include <exo/types.hpp>

namespace exo {

class LogContext {
public:
    // `key`: the record's idempotency key, when it is known yet. `trace`: the
    // record's trace (PendingRecord::trace), when there is one.
    LogContext(const Topic& topic, Partition partition, Offset offset,
               std::optional<std::string_view> key = std::nullopt,
               const TraceContext* trace = nullptr);
    ~LogContext();
    LogContext(const LogContext&) = delete;
    LogContext& operator=(const LogContext&) = delete;

    // The context in force on the calling thread, or nullptr.
    static const LogContext* current() noexcept;

    const std::string& topic() const noexcept { return topic_; }
    std::int32_t partition() const noexcept { return partition_; }
    std::int64_t offset() const noexcept { return offset_; }
    const std::optional<std::string>& key() const noexcept { return key_; }
    // Empty when the context was made without a trace.
    const std::string& trace_id() const noexcept { return trace_id_; }
    const std::string& span_id() const noexcept { return span_id_; }

private:
    std::string topic_;
    std::int32_t partition_;
    std::int64_t offset_;
    std::optional<std::string> key_;
    std::string trace_id_;
    std::string span_id_;
    const LogContext* previous_;
};

// Hides the calling thread's context while it lives: for lines that are not
// about the record this thread is working on (a summary of repeated lines that
// a sink writes during another thread's call).
class NoLogContext {
public:
    NoLogContext() noexcept;
    ~NoLogContext();
    NoLogContext(const NoLogContext&) = delete;
    NoLogContext& operator=(const NoLogContext&) = delete;

private:
    const LogContext* hidden_;
};

}  // namespace exo
