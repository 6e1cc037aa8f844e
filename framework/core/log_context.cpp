#include "core/log_context.hpp"

namespace exo {
namespace {

thread_local const LogContext* current_context = nullptr;

}  // namespace

LogContext::LogContext(const Topic& topic, Partition partition, Offset offset,
                       std::optional<std::string_view> key, const TraceContext* trace)
    : topic_(topic.value),
      partition_(partition.value),
      offset_(offset.value),
      key_(key ? std::optional<std::string>(*key) : std::nullopt),
      trace_id_(trace ? trace->trace_id : std::string()),
      span_id_(trace ? trace->span_id : std::string()),
      previous_(current_context) {
    current_context = this;
}

LogContext::~LogContext() {
    current_context = previous_;
}

const LogContext* LogContext::current() noexcept {
    return current_context;
}

NoLogContext::NoLogContext() noexcept : hidden_(current_context) {
    current_context = nullptr;
}

NoLogContext::~NoLogContext() {
    current_context = hidden_;
}

}  // namespace exo
