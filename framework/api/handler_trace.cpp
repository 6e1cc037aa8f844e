// The trace accessor of the record context (exo/handler.hpp; a batch handler's
// records are record contexts too): the framework passes each record's trace
// in; a context made without one (the handler test kit, benchmarks) starts its
// own from the record, as the daemon would.
#include <exo/handler.hpp>
#include <exo/outside_transaction.hpp>

#include "core/trace_context.hpp"

namespace exo {

const TraceContext& HandlerContext::trace() const {
    if (trace_ != nullptr) return *trace_;
    if (!own_trace_) own_trace_ = start_trace(record_);
    return *own_trace_;
}

const TraceContext& OutsideContext::trace() const {
    if (trace_ != nullptr) return *trace_;
    if (!own_trace_) own_trace_ = start_trace(record_);
    return *own_trace_;
}

}  // namespace exo
