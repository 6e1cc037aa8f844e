// W3C trace context end to end (exo/trace.hpp, docs/tracing.md) against real
// PostgreSQL, Redis and the mock Kafka cluster: a record's traceparent reaches
// the records its handler emits (read back from Kafka after the relay), its
// dead letter and its log lines; a record without a valid one gets a new trace
// shared by all three; a batch handler's emits each carry their own record's.
#include <doctest/doctest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <exo/testing.hpp>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/trace_context.hpp"
#include "kafka/producer.hpp"
#include "ledger.hpp"
#include "logging/log_formatters.hpp"
#include "outbox_support.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::header;
using exo::testing::pending;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;
using exo::testing::wait_until;

namespace {

const std::string kTrace1 = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kTrace2 = "0af7651916cd43dd8448eb211c80319c";
const std::string kTrace3 = "5b8aa5a2d2c872e8321cf37308d69df2";
const std::string kUpstream = "00f067aa0ba902b7";

std::string traceparent(const std::string& trace_id) {
    return "00-" + trace_id + "-" + kUpstream + "-01";
}

// Keeps each line formatted as it is logged, on the logging thread, where its
// LogContext is (spdlog's ringbuffer_sink formats only when read: too late).
class JsonLines final : public spdlog::sinks::base_sink<std::mutex> {
public:
    JsonLines() { set_formatter_(std::make_unique<exo::JsonLogFormatter>()); }
    std::vector<std::string> lines() {
        std::lock_guard lock(mutex_);
        return lines_;
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t formatted;
        formatter_->format(msg, formatted);
        lines_.emplace_back(formatted.data(), formatted.size());
    }
    void flush_() override {}

private:
    std::vector<std::string> lines_;
};

// The JSON lines every logger cloned from the default logger after it was made
// writes (the workers' loggers are cloned when a daemon starts), at `level`.
class CapturedLog {
public:
    explicit CapturedLog(spdlog::level::level_enum level = spdlog::level::info)
        : sink_(std::make_shared<JsonLines>()), was_(spdlog::default_logger()->level()) {
        spdlog::default_logger()->sinks().push_back(sink_);
        spdlog::default_logger()->set_level(level);
    }
    ~CapturedLog() {
        spdlog::default_logger()->sinks().pop_back();
        spdlog::default_logger()->set_level(was_);
    }
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;

    // Lines about the record with this idempotency key (their "key" field).
    std::vector<nlohmann::json> about(const std::string& key) {
        std::vector<nlohmann::json> out;
        for (const auto& line : sink_->lines()) {
            auto j = nlohmann::json::parse(line);
            if (j.value("key", "") == key) out.push_back(std::move(j));
        }
        return out;
    }
    std::string dump() {
        std::string out;
        for (const auto& line : sink_->lines()) out += line;
        return out;
    }
    // Lines whose trace_id is `trace_id` and whose message holds `part`.
    std::size_t count(const std::string& trace_id, const std::string& part) {
        std::size_t n = 0;
        for (const auto& line : sink_->lines()) {
            const auto j = nlohmann::json::parse(line);
            if (j.value("trace_id", "") == trace_id &&
                j.value("message", "").find(part) != std::string::npos)
                ++n;
        }
        return n;
    }

private:
    std::shared_ptr<JsonLines> sink_;
    spdlog::level::level_enum was_;
};

exo::Traceparent parsed(const std::string& value) {
    const auto p = exo::parse_traceparent(value);
    REQUIRE_MESSAGE(p.traceparent, value << ": " << p.problem);
    return *p.traceparent;
}

exo::OutgoingRecord payment_record(const PipelineHarness& h, const std::string& event,
                                   const std::string& account,
                                   std::vector<exo::RecordHeader> headers) {
    return {h.topic(), 0, std::nullopt, exo::Payment{event, account, "CREDIT", 10, 1}.json(),
            std::move(headers)};
}

void produce(const PipelineHarness& h, const std::vector<exo::OutgoingRecord>& records) {
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    for (const auto& r : records) producer.produce(r);
    producer.flush(30s);
}

// The emitted records of `topic`, by their "event" header (emitting_ledger's).
std::map<std::string, exo::Record> by_event(const PipelineHarness& h, const std::string& topic,
                                            std::size_t expected) {
    std::map<std::string, exo::Record> out;
    for (auto& r : read_topic(h.bootstrap(), topic, expected)) out[header(r, "event")] = r;
    REQUIRE(out.size() == expected);
    return out;
}

std::map<std::string, exo::Record> dead_letters(const PipelineHarness& h, std::size_t expected) {
    std::map<std::string, exo::Record> out;
    for (auto& r : read_topic(h.bootstrap(), h.topic() + ".dlq", expected))
        out[header(r, "exo-idempotency-key")] = r;
    REQUIRE(out.size() == expected);
    return out;
}

void run_until_published(PipelineHarness& h) {
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(120s));
    wait_until(
        "the outbox to drain", 60s, [&] { return pending(h); },
        [](std::int64_t n) { return n == 0; });
}

}  // namespace

TEST_CASE(
    "a record's traceparent goes on through exo: its emits continue its trace under exo's span, "
    "its dead letter keeps it, and its log lines name it") {
    PipelineHarness h({.name = "trace_kept",
                       .partitions = 1,
                       .with_sequence = false,
                       .handler = "emitting_ledger",
                       .max_attempts = 3});
    h.cluster().create_topic(h.out_topic(), 1);
    CapturedLog log;
    produce(h, {payment_record(
                    h, "good-1", "acc-1",
                    {{"traceparent", traceparent(kTrace1)}, {"tracestate", "congo=t61rcWkgMzE"}}),
                payment_record(h, "flaky-1", "acc-2", {{"traceparent", traceparent(kTrace2)}}),
                payment_record(h, "poison-1", "acc-3", {{"traceparent", traceparent(kTrace3)}})});
    run_until_published(h);

    const auto emitted = by_event(h, h.out_topic(), 2);
    const auto good = parsed(header(emitted.at("good-1"), "traceparent"));
    CHECK(good.trace_id == kTrace1);
    CHECK(good.parent_id != kUpstream);  // exo's span, not the producer's
    CHECK(good.sampled);
    CHECK(header(emitted.at("good-1"), "tracestate") == "congo=t61rcWkgMzE");
    const auto flaky = parsed(header(emitted.at("flaky-1"), "traceparent"));
    CHECK(flaky.trace_id == kTrace2);
    CHECK(header(emitted.at("flaky-1"), "tracestate") == "(missing)");
    // flaky-1's retries were logged in its trace, under the span its emit names as parent.
    const auto flaky_lines = log.about("flaky-1");
    REQUIRE_MESSAGE(!flaky_lines.empty(), log.dump());
    for (const auto& line : flaky_lines) {
        CHECK(line.value("trace_id", "") == kTrace2);
        CHECK(line.value("span_id", "") == flaky.parent_id);
    }

    const auto dead = dead_letters(h, 1);
    const auto& letter = dead.at("poison-1");
    CHECK(header(letter, "traceparent") == traceparent(kTrace3));  // as received
    const auto exo_span = parsed(header(letter, "exo-traceparent"));
    CHECK(exo_span.trace_id == kTrace3);
    CHECK(log.count(kTrace3, "dead-lettered") == 1);
}

TEST_CASE(
    "a record without a valid traceparent gets a new trace, named alike by its log lines, its "
    "emit and its dead letter; a malformed one stays on the dead letter as received") {
    PipelineHarness h({.name = "trace_new",
                       .partitions = 1,
                       .with_sequence = false,
                       .handler = "emitting_ledger",
                       .max_attempts = 3});
    h.cluster().create_topic(h.out_topic(), 1);
    CapturedLog log(spdlog::level::debug);
    produce(h, {payment_record(h, "flaky-2", "acc-1", {}),
                payment_record(h, "good-2", "acc-2", {{"traceparent", "garbage"}}),
                payment_record(h, "poison-2", "acc-3", {{"traceparent", "not-a-traceparent"}}),
                payment_record(h, "poison-3", "acc-4", {})});
    run_until_published(h);

    const auto emitted = by_event(h, h.out_topic(), 2);
    const auto flaky = parsed(header(emitted.at("flaky-2"), "traceparent"));
    const auto good = parsed(header(emitted.at("good-2"), "traceparent"));
    CHECK(flaky.trace_id != good.trace_id);
    const auto flaky_lines = log.about("flaky-2");
    REQUIRE_FALSE(flaky_lines.empty());
    for (const auto& line : flaky_lines) CHECK(line.value("trace_id", "") == flaky.trace_id);
    // The malformed header was noticed at debug, in the trace that replaced it.
    CHECK(log.count(good.trace_id, "not valid W3C trace context") == 1);

    const auto dead = dead_letters(h, 2);
    const auto& malformed = dead.at("poison-2");
    CHECK(header(malformed, "traceparent") == "not-a-traceparent");
    const auto replaced = parsed(header(malformed, "exo-traceparent"));
    CHECK(log.count(replaced.trace_id, "dead-lettered") == 1);
    const auto& none = dead.at("poison-3");
    const auto started = parsed(header(none, "traceparent"));
    CHECK(header(none, "exo-traceparent") == header(none, "traceparent"));
    CHECK(log.count(started.trace_id, "dead-lettered") == 1);
    CHECK(std::set<std::string>{flaky.trace_id, good.trace_id, replaced.trace_id, started.trace_id}
              .size() == 4);
}

TEST_CASE("a batch handler's emits each carry the trace of their own record") {
    PipelineHarness h(
        {.name = "trace_batch", .partitions = 1, .with_sequence = false, .handler = "ledger"});
    const std::vector<std::string> traces{kTrace1, kTrace2, kTrace3, "", ""};
    std::vector<exo::OutgoingRecord> records;
    for (std::size_t n = 0; n < traces.size(); ++n) {
        std::vector<exo::RecordHeader> headers;
        if (!traces[n].empty()) headers.push_back({"traceparent", traceparent(traces[n])});
        records.push_back(
            payment_record(h, "b-" + std::to_string(n), "acc-" + std::to_string(n), headers));
    }
    produce(h, records);
    run_until_published(h);

    // The ledger emits each payment's JSON to ledger.applied: match them by value.
    std::map<std::string, std::string> trace_of_value;
    for (const auto& r :
         read_topic(h.bootstrap(), exo::handlers::kDefaultAppliedTopic, traces.size()))
        trace_of_value[r.value] = parsed(header(r, "traceparent")).trace_id;
    REQUIRE(trace_of_value.size() == traces.size());
    std::set<std::string> fresh;
    for (std::size_t n = 0; n < traces.size(); ++n) {
        const auto& trace_id = trace_of_value.at(records[n].value);
        if (traces[n].empty())
            fresh.insert(trace_id);
        else
            CHECK(trace_id == traces[n]);
    }
    CHECK(fresh.size() == 2);
    for (const auto& t : traces) CHECK(fresh.count(t) == 0);
}
