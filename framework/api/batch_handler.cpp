#include <exo/batch_handler.hpp>

#include "api/context_access.hpp"

namespace exo {
namespace {

std::string describe(std::size_t index, const std::exception_ptr& cause) {
    std::string what = "record " + std::to_string(index) + " of the batch failed";
    if (!cause) return what;
    try {
        std::rethrow_exception(cause);
    } catch (const std::exception& e) {
        return what + ": " + e.what();
    } catch (...) {
        return what + " with an exception that is not a std::exception";
    }
}

}  // namespace

BatchRecordFailed::BatchRecordFailed(std::size_t index, std::exception_ptr cause)
    : std::runtime_error(describe(index, cause)), index_(index), cause_(std::move(cause)) {}

void BatchHandler::handle(HandlerContext& ctx) {
    // The batch of one is the record's own context: its result, emits and
    // failures are the record's as handle() would leave them.
    auto batch = detail::ContextAccess::batch(ctx.transaction(), {&ctx, 1}, ctx.log());
    try {
        handle_batch(batch);
    } catch (const BatchRecordFailed& e) {
        // One record: whatever failed is this record's, as handle() would throw it.
        if (e.cause()) std::rethrow_exception(e.cause());
        throw RetryableError(e.what());
    }
}

}  // namespace exo
