// W3C trace context: core/trace_context.hpp (parsing, new ids, headers for
// what a record causes) and the dead letter's trace headers. No servers.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <exo/trace.hpp>
#include "core/trace_context.hpp"
#include "protocol/dead_letter.hpp"

using namespace exo;

namespace {

constexpr const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

Record record_with(std::vector<RecordHeader> headers) {
    Record r;
    r.topic = Topic{"payments"};
    r.partition = Partition{0};
    r.offset = Offset{1};
    r.value = "{}";
    r.headers = std::move(headers);
    return r;
}

bool is_trace_hex(const std::string& s, std::size_t length) {
    return s.size() == length && s.find_first_not_of("0123456789abcdef") == std::string::npos &&
           s.find_first_not_of('0') != std::string::npos;
}

std::vector<std::string> values_of(const std::vector<RecordHeader>& headers,
                                   std::string_view name) {
    std::vector<std::string> out;
    for (const auto& h : headers)
        if (h.name == name) out.push_back(h.value.value_or("<null>"));
    return out;
}

}  // namespace

TEST_SUITE("trace context") {
    TEST_CASE("a version 00 traceparent gives its trace id, parent id and sampled flag") {
        const auto parsed = parse_traceparent(kValid);
        REQUIRE(parsed.traceparent);
        CHECK(parsed.traceparent->trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
        CHECK(parsed.traceparent->parent_id == "00f067aa0ba902b7");
        CHECK(parsed.traceparent->sampled);
        const auto unsampled =
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        REQUIRE(unsampled.traceparent);
        CHECK_FALSE(unsampled.traceparent->sampled);
        // Only bit 0 is the sampled flag.
        CHECK(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")
                  .traceparent->sampled);
        CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02")
                        .traceparent->sampled);
    }

    TEST_CASE("a later version is read by its first four fields") {
        const auto longer = parse_traceparent(
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds");
        REQUIRE(longer.traceparent);
        CHECK(longer.traceparent->trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
        CHECK(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
                  .traceparent);
        // ... but its fourth field must end there.
        CHECK_FALSE(parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x")
                        .traceparent);
    }

    TEST_CASE("invalid traceparents are refused, each with a reason") {
        const std::vector<std::string> invalid{
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // 00 is 55 chars
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",   // uppercase
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",   // separator
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",   // separator
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   // flags not hex
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version not hex
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // leading space
        };
        for (const auto& value : invalid) {
            const auto parsed = parse_traceparent(value);
            CHECK_MESSAGE(!parsed.traceparent, value);
            CHECK_MESSAGE(!parsed.problem.empty(), value);
        }
    }

    TEST_CASE("new ids are random lowercase hex of the W3C lengths, never all zero") {
        std::set<std::string> seen;
        for (int i = 0; i < 1000; ++i) {
            const auto trace_id = random_trace_hex(16);
            const auto span_id = random_trace_hex(8);
            CHECK(is_trace_hex(trace_id, 32));
            CHECK(is_trace_hex(span_id, 16));
            seen.insert(trace_id);
        }
        CHECK(seen.size() == 1000);
    }

    TEST_CASE("a record with a valid traceparent continues its trace under a new span") {
        const auto trace = start_trace(record_with({{"tracestate", "congo=t61rcWkgMzE"},
                                                    {"traceparent", kValid},
                                                    {"tracestate", "rojo=00f067aa0ba902b7"}}));
        CHECK(trace.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
        CHECK(trace.parent_id == "00f067aa0ba902b7");
        CHECK(trace.continued());
        CHECK(trace.sampled);
        CHECK(is_trace_hex(trace.span_id, 16));
        CHECK(trace.span_id != trace.parent_id);
        CHECK(trace.tracestate == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
        CHECK(trace.traceparent() ==
              "00-4bf92f3577b34da6a3ce929d0e0e4736-" + trace.span_id + "-01");
        CHECK_FALSE(traceparent_problem(record_with({{"traceparent", kValid}})));
    }

    TEST_CASE("a record without a valid traceparent starts a new sampled trace") {
        const std::vector<std::vector<RecordHeader>> cases{
            {},
            {{"traceparent", "garbage"}, {"tracestate", "congo=t61rcWkgMzE"}},
            {{"traceparent", std::nullopt}},
            {{"traceparent", kValid}, {"traceparent", kValid}},
        };
        for (const auto& headers : cases) {
            const auto trace = start_trace(record_with(headers));
            CHECK(is_trace_hex(trace.trace_id, 32));
            CHECK(trace.trace_id != "4bf92f3577b34da6a3ce929d0e0e4736");
            CHECK(is_trace_hex(trace.span_id, 16));
            CHECK_FALSE(trace.continued());
            CHECK(trace.sampled);
            CHECK(trace.tracestate.empty());  // W3C: no tracestate without a valid traceparent
            CHECK(parse_traceparent(trace.traceparent()).traceparent);
        }
        CHECK_FALSE(traceparent_problem(record_with({})));
        CHECK(traceparent_problem(record_with({{"traceparent", "garbage"}})));
        CHECK(traceparent_problem(record_with({{"traceparent", kValid}, {"traceparent", kValid}})));
    }

    TEST_CASE("what a record causes carries its traceparent and tracestate, unless it has one") {
        const auto trace = start_trace(
            record_with({{"traceparent", kValid}, {"tracestate", "congo=t61rcWkgMzE"}}));
        std::vector<RecordHeader> headers{{"content-type", "json"}};
        add_trace_headers(headers, trace);
        CHECK(values_of(headers, "traceparent") == std::vector<std::string>{trace.traceparent()});
        CHECK(values_of(headers, "tracestate") == std::vector<std::string>{"congo=t61rcWkgMzE"});
        CHECK(headers.front().name == "content-type");

        std::vector<RecordHeader> own{
            {"traceparent", "00-" + std::string(32, 'a') + "-" + std::string(16, 'b') + "-00"}};
        add_trace_headers(own, trace);
        CHECK(own.size() == 1);

        std::vector<RecordHeader> fresh;
        add_trace_headers(fresh, start_trace(record_with({})));
        CHECK(values_of(fresh, "tracestate").empty());
        CHECK(values_of(fresh, "traceparent").size() == 1);
    }

    TEST_CASE("a dead letter names the record's trace and keeps its own traceparent as received") {
        PendingRecord valid{record_with({{"traceparent", kValid}})};
        auto out = make_dead_letter(valid, "payments.dlq", "billing", "boom", "k");
        CHECK(values_of(out.headers, "traceparent") == std::vector<std::string>{kValid});
        CHECK(values_of(out.headers, "exo-traceparent") ==
              std::vector<std::string>{valid.trace.traceparent()});

        PendingRecord malformed{record_with({{"traceparent", "garbage"}})};
        out = make_dead_letter(malformed, "payments.dlq", "billing", "boom", "k");
        CHECK(values_of(out.headers, "traceparent") == std::vector<std::string>{"garbage"});
        CHECK(values_of(out.headers, "exo-traceparent") ==
              std::vector<std::string>{malformed.trace.traceparent()});

        PendingRecord none{record_with({})};
        out = make_dead_letter(none, "payments.dlq", "billing", "boom", "k");
        CHECK(values_of(out.headers, "traceparent") ==
              std::vector<std::string>{none.trace.traceparent()});
        CHECK(values_of(out.headers, "exo-traceparent") ==
              std::vector<std::string>{none.trace.traceparent()});
    }

    TEST_CASE("a delivery's trace is decided once, when its pending record is made") {
        PendingRecord pending{record_with({})};
        const auto first = pending.trace.trace_id;
        pending.attempts = 3;
        CHECK(pending.trace.trace_id == first);
        PendingRecord redelivered{record_with({})};
        CHECK(redelivered.trace.trace_id != first);
    }
}
