// The trace accessors of the handler contexts (exo/handler.hpp,
// exo/batch_handler.hpp): the framework passes each record's trace in; a
// context made without one (the handler test kit, benchmarks) starts its own
// from the record, as the daemon would.
#include <stdexcept>

#include <exo/batch_handler.hpp>
#include <exo/handler.hpp>

#include "core/trace_context.hpp"

namespace exo {

const TraceContext& HandlerContext::trace() const {
    if (trace_ != nullptr) return *trace_;
    if (!own_trace_) own_trace_ = start_trace(record_);
    return *own_trace_;
}

const TraceContext& BatchContext::trace(std::size_t i) const {
    const auto& entry = entries_.at(i);
    // The framework fills every entry; a missing trace is a bug in exo, not the handler's.
    if (entry.trace == nullptr)
        throw std::logic_error("BatchContext entry " + std::to_string(i) + " has no trace");
    return *entry.trace;
}

}  // namespace exo
