#pragma once
// How exo builds the contexts a handler gets and reads back what the handler
// left in them. HandlerContext and BatchContext have private constructors and
// befriend this struct, so a handler author sees only what a handler uses;
// the runners and run_record_in_transaction (which the handler test kit runs) build
// them here.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <exo/batch_handler.hpp>
#include <exo/handler.hpp>
#include <exo/outbox.hpp>
#include <exo/outside_transaction.hpp>

namespace exo::detail {

struct ContextAccess {
    // `emit_limits`: the largest record emit() accepts per topic (exo/outbox.hpp);
    // nullptr: librdkafka's default message.max.bytes.
    // `trace`: the delivery's W3C trace (core/trace_context.hpp); nullptr (the
    // handler test kit) starts one from the record on first use.
    // `batch_index`: set for record i of a batch, whose json() and emit()
    // failures then name it (BatchRecordFailed(i, ...)). Every reference and
    // pointer must outlive the context.
    static HandlerContext record(pqxx::transaction_base& tx, const Record& record,
                                 const std::string& key, JsonPayload& payload, spdlog::logger& log,
                                 int attempt, bool rerun, const EmitLimits* emit_limits,
                                 const TraceContext* trace,
                                 std::optional<std::size_t> batch_index = std::nullopt) {
        return HandlerContext(tx, record, key, payload, log, attempt, rerun, emit_limits, trace,
                              batch_index);
    }
    // The context of before_transaction(); its hand_over() writes `handed_over`.
    static OutsideContext outside(const Record& record, const std::string& key,
                                  JsonPayload& payload, spdlog::logger& log, int attempt,
                                  const TraceContext* trace, std::any& handed_over) {
        return OutsideContext(record, key, payload, log, attempt, trace, handed_over);
    }
    // What handed_over() returns; nullptr: an empty std::any.
    static void hand_over(HandlerContext& ctx, const std::any* value) { ctx.handed_over_ = value; }
    static BatchContext batch(pqxx::transaction_base& tx, std::span<HandlerContext> records,
                              spdlog::logger& log) {
        return BatchContext(tx, records, log);
    }

    // What the handler passed to set_result(); empty if nothing.
    static std::string& result(HandlerContext& ctx) { return ctx.result_; }
    // What the handler emitted, in order; exo writes it to the outbox.
    static std::vector<OutboxMessage>& emitted(HandlerContext& ctx) { return ctx.emitted_; }
};

}  // namespace exo::detail
