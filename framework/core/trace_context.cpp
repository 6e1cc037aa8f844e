#include "core/trace_context.hpp"

#include <algorithm>
#include <array>
#include <random>

namespace exo {
namespace {

constexpr std::size_t kVersion00Length = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

bool is_lower_hex(std::string_view text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool all_zero(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c == '0'; });
}

int hex_value(char c) {
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

std::mt19937_64& generator() {
    thread_local std::mt19937_64 engine = [] {
        std::random_device device;
        std::seed_seq seed{device(), device(), device(), device(), device(), device()};
        return std::mt19937_64(seed);
    }();
    return engine;
}

std::vector<const RecordHeader*> headers_named(const Record& record, std::string_view name) {
    std::vector<const RecordHeader*> out;
    for (const auto& h : record.headers)
        if (h.name == name) out.push_back(&h);
    return out;
}

// The record's traceparent as parsed, with why it is not usable when it is not.
// nullopt: the record has no traceparent header at all.
std::optional<TraceparentParse> read_traceparent(const Record& record) {
    const auto found = headers_named(record, kTraceparentHeader);
    if (found.empty()) return std::nullopt;
    // Two values leave the record's trace ambiguous; W3C treats a repeated
    // traceparent as invalid too.
    if (found.size() > 1)
        return TraceparentParse{std::nullopt, "the record has " + std::to_string(found.size()) +
                                                  " traceparent headers"};
    if (!found.front()->value) return TraceparentParse{std::nullopt, "the header is null"};
    return parse_traceparent(*found.front()->value);
}

std::string joined_tracestate(const Record& record) {
    std::string out;
    for (const auto* h : headers_named(record, kTracestateHeader)) {
        if (!h->value || h->value->empty()) continue;
        if (!out.empty()) out += ',';
        out += *h->value;
    }
    return out;
}

}  // namespace

std::string TraceContext::traceparent() const {
    return "00-" + trace_id + "-" + span_id + (sampled ? "-01" : "-00");
}

TraceparentParse parse_traceparent(std::string_view value) {
    auto invalid = [](std::string why) { return TraceparentParse{std::nullopt, std::move(why)}; };
    if (value.size() < kVersion00Length)
        return invalid("shorter than the 55 characters of version 00");
    const std::string_view version = value.substr(0, 2);
    if (!is_lower_hex(version) || value[2] != '-')
        return invalid("it does not start with a version of 2 lowercase hex digits and '-'");
    if (version == "ff") return invalid("version ff is invalid");
    if (version == "00" && value.size() != kVersion00Length)
        return invalid("version 00 is exactly 55 characters");
    if (value.size() > kVersion00Length && value[kVersion00Length] != '-')
        return invalid("the flags are not followed by '-' or the end");
    const std::string_view trace_id = value.substr(3, 32);
    const std::string_view parent_id = value.substr(36, 16);
    const std::string_view flags = value.substr(53, 2);
    if (!is_lower_hex(trace_id) || value[35] != '-')
        return invalid("the trace id is not 32 lowercase hex digits followed by '-'");
    if (!is_lower_hex(parent_id) || value[52] != '-')
        return invalid("the parent id is not 16 lowercase hex digits followed by '-'");
    if (!is_lower_hex(flags)) return invalid("the flags are not 2 lowercase hex digits");
    if (all_zero(trace_id)) return invalid("the trace id is all zero");
    if (all_zero(parent_id)) return invalid("the parent id is all zero");
    return TraceparentParse{
        Traceparent{std::string(trace_id), std::string(parent_id), (hex_value(flags[1]) & 1) != 0},
        {}};
}

std::string random_trace_hex(std::size_t bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(bytes * 2, '0');
    do {
        auto& engine = generator();
        for (std::size_t i = 0; i < bytes; i += 8) {
            std::uint64_t word = engine();
            for (std::size_t b = i; b < std::min(bytes, i + 8); ++b, word >>= 8) {
                out[2 * b] = kHex[(word >> 4) & 0x0f];
                out[2 * b + 1] = kHex[word & 0x0f];
            }
        }
    } while (all_zero(out));
    return out;
}

TraceContext start_trace(const Record& record) {
    TraceContext trace;
    trace.span_id = random_trace_hex(8);
    const auto parsed = read_traceparent(record);
    if (parsed && parsed->traceparent) {
        trace.trace_id = parsed->traceparent->trace_id;
        trace.parent_id = parsed->traceparent->parent_id;
        trace.sampled = parsed->traceparent->sampled;
        // W3C: tracestate goes with a valid traceparent only.
        trace.tracestate = joined_tracestate(record);
    } else {
        trace.trace_id = random_trace_hex(16);
    }
    return trace;
}

std::optional<std::string> traceparent_problem(const Record& record) {
    const auto parsed = read_traceparent(record);
    if (!parsed || parsed->traceparent) return std::nullopt;
    return parsed->problem;
}

void add_trace_headers(std::vector<RecordHeader>& headers, const TraceContext& trace) {
    const bool has_own = std::any_of(headers.begin(), headers.end(), [](const RecordHeader& h) {
        return h.name == kTraceparentHeader;
    });
    if (has_own) return;
    headers.push_back({std::string(kTraceparentHeader), trace.traceparent()});
    if (!trace.tracestate.empty())
        headers.push_back({std::string(kTracestateHeader), trace.tracestate});
}

}  // namespace exo
