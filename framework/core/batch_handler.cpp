#include <exo/batch_handler.hpp>

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

const nlohmann::json& BatchContext::json(std::size_t i) {
    auto& entry = entries_.at(i);
    try {
        return entry.payload->document();
    } catch (const PermanentError&) {
        throw BatchRecordFailed(i, std::current_exception());
    }
}

void BatchHandler::handle(HandlerContext& ctx) {
    // The record and key outlive the call; the payload is the context's own.
    std::vector<BatchContext::Entry> one(1);
    auto& entry = one.front();
    entry.record = &ctx.record();
    entry.key = &ctx.idempotency_key();
    entry.payload = &ctx.payload();
    entry.attempt = ctx.attempt();
    entry.rerun = ctx.rerun();
    entry.trace = &ctx.trace();
    BatchContext batch(ctx.transaction(), one, ctx.log(), ctx.max_emit_bytes());
    try {
        handle_batch(batch);
    } catch (const BatchRecordFailed& e) {
        // One record: whatever failed is this record's, as handle() would throw it.
        if (e.cause()) std::rethrow_exception(e.cause());
        throw RetryableError(e.what());
    }
    if (!entry.result.empty()) ctx.set_result(std::move(entry.result));
    for (auto& message : entry.emitted) ctx.emitted().push_back(std::move(message));
}

}  // namespace exo
