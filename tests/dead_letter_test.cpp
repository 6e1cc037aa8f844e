// The dead-letter record: protocol/dead_letter.hpp. No servers.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include <exo/outbox.hpp>

#include "core/exo_headers.hpp"
#include "core/text.hpp"
#include "pg/migrations.hpp"
#include "protocol/dead_letter.hpp"

using namespace exo;

namespace {

PendingRecord failed_record() {
    PendingRecord p;
    p.record.topic = Topic{"payments"};
    p.record.partition = Partition{7};
    p.record.offset = Offset{9000000001};
    p.record.key = "acc-0001";
    p.record.value = R"({"eventId":"evt-1"})";
    p.record.headers = {{"trace-id", "abc"}, {"empty", std::nullopt}, {"trace-id", "def"}};
    p.attempts = 5;
    return p;
}

// Values of every header with this name, in order.
std::vector<std::optional<std::string>> header_values(const OutgoingRecord& r,
                                                      const std::string& name) {
    std::vector<std::optional<std::string>> out;
    for (const auto& h : r.headers)
        if (h.name == name) out.push_back(h.value);
    return out;
}

std::optional<std::string> only_header(const OutgoingRecord& r, const std::string& name) {
    auto values = header_values(r, name);
    REQUIRE_MESSAGE(values.size() == 1, "header " << name << " appears " << values.size());
    return values[0];
}

}  // namespace

TEST_SUITE("make_dead_letter") {
    TEST_CASE("the dead letter goes to the DLQ topic, partitioned by the original key") {
        auto out = make_dead_letter(failed_record(), "payments.dlq", "billing", "boom", "evt-1");
        CHECK(out.topic == "payments.dlq");
        CHECK_FALSE(out.partition.has_value());
        CHECK(out.key == std::optional<std::string>("acc-0001"));
    }

    TEST_CASE("the original value and headers are kept, in order and before exo's") {
        auto out = make_dead_letter(failed_record(), "payments.dlq", "billing", "boom", "evt-1");
        CHECK(out.value == R"({"eventId":"evt-1"})");
        REQUIRE(out.headers.size() >= 3);
        CHECK(out.headers[0].name == "trace-id");
        CHECK(out.headers[0].value == std::optional<std::string>("abc"));
        CHECK(out.headers[1].name == "empty");
        CHECK_FALSE(out.headers[1].value.has_value());
        CHECK(out.headers[2].name == "trace-id");
        CHECK(out.headers[2].value == std::optional<std::string>("def"));
    }

    TEST_CASE("the reason, attempts and original coordinates are added as headers") {
        auto out = make_dead_letter(failed_record(), "payments.dlq", "billing",
                                    "handler: amount must be positive", "evt-1");
        CHECK(only_header(out, "exo-error") == "handler: amount must be positive");
        CHECK(only_header(out, "exo-attempts") == "5");
        CHECK(only_header(out, "exo-original-topic") == "payments");
        CHECK(only_header(out, "exo-original-partition") == "7");
        CHECK(only_header(out, "exo-original-offset") == "9000000001");
        CHECK(only_header(out, "exo-consumer-group") == "billing");
        CHECK(only_header(out, "exo-idempotency-key") == "evt-1");
        CHECK(out.headers.size() == 3 + 7 + 2);  // + exo-traceparent, traceparent
    }

    TEST_CASE("the idempotency key header is absent when the key could not be derived") {
        auto out = make_dead_letter(failed_record(), "payments.dlq", "billing", "no key", "");
        CHECK(header_values(out, "exo-idempotency-key").empty());
        CHECK(only_header(out, "exo-error") == "no key");
        CHECK(out.headers.size() == 3 + 6 + 2);
    }

    TEST_CASE("a record without a key or headers stays without a key") {
        PendingRecord p;
        p.record.topic = Topic{"t"};
        p.record.partition = Partition{0};
        p.record.offset = Offset{0};
        p.record.value = "not json";
        auto out = make_dead_letter(p, "t.dlq", "billing", "payload is not valid JSON", "");
        CHECK_FALSE(out.key.has_value());
        CHECK(out.value == "not json");
        CHECK(only_header(out, "exo-attempts") == "0");
        CHECK(only_header(out, "exo-original-offset") == "0");
        CHECK(out.headers.size() == 6 + 2);
    }

    TEST_CASE("the original record is not modified") {
        const auto original = failed_record();
        make_dead_letter(original, "payments.dlq", "billing", "boom", "evt-1");
        CHECK(original.record.headers.size() == 3);
    }
}

TEST_CASE("a dead letter's reason is capped and made valid UTF-8") {
    auto out = exo::make_dead_letter(failed_record(), "payments.dlq", "billing",
                                     std::string(100000, 'x') + "\xC0\x80", "evt-1");
    const auto* h = [&]() -> const exo::RecordHeader* {
        for (const auto& x : out.headers)
            if (x.name == "exo-error") return &x;
        return nullptr;
    }();
    REQUIRE(h != nullptr);
    CHECK(h->value->size() <= exo::kMaxDeadLetterReasonBytes);
    CHECK(exo::is_postgres_text(*h->value));
}

TEST_CASE("a dead letter too large with its value is sent without it, saying how large it was") {
    auto record = failed_record();
    auto out = exo::make_dead_letter(record, "payments.dlq", "billing", "too large", "evt-1",
                                     exo::DeadLetterShape::value_omitted);
    CHECK(out.value.empty());
    bool found = false;
    for (const auto& h : out.headers)
        if (h.name == "exo-value-omitted") {
            found = true;
            CHECK(*h.value == std::to_string(record.record.value.size()));
        }
    CHECK(found);
}

TEST_CASE(
    "a record's own exo-* headers are renamed on its dead letter, which carries one of each of "
    "exo's headers, exo's own") {
    PendingRecord p = failed_record();
    p.record.headers = {{"exo-consumer-group", "someone-else"},
                        {"exo-idempotency-key", "forged"},
                        {"exo-error", "forged"},
                        {"exo-original-offset", "1"},
                        {"exo-received-exo-error", "already renamed once"},
                        {"exo-replayed-from", "payments/7/3"},
                        {"exoskeleton", "not exo's"}};
    auto out = make_dead_letter(p, "payments.dlq", "billing", "boom", "evt-1");
    CHECK(only_header(out, "exo-consumer-group") == "billing");
    CHECK(only_header(out, "exo-idempotency-key") == "evt-1");
    CHECK(only_header(out, "exo-error") == "boom");
    CHECK(only_header(out, "exo-original-offset") == "9000000001");
    // Kept for the operator, under names no reader takes for exo's.
    CHECK(only_header(out, "exo-received-exo-consumer-group") == "someone-else");
    CHECK(only_header(out, "exo-received-exo-idempotency-key") == "forged");
    CHECK(only_header(out, "exo-received-exo-error") == "forged");
    CHECK(only_header(out, "exo-received-exo-received-exo-error") == "already renamed once");
    // A replayed copy's origin is exo's, and says the letter is of a replay.
    CHECK(only_header(out, "exo-replayed-from") == "payments/7/3");
    CHECK(only_header(out, "exoskeleton") == "not exo's");
}

namespace {

std::size_t wire_size(const OutgoingRecord& letter) {
    return outbox_wire_size({letter.topic, letter.key, letter.value, letter.headers});
}

DeadLetterShape shape_for(const PendingRecord& p, std::size_t limit) {
    return fitting_dead_letter_shape(p, "payments.dlq", "billing", "refused", "evt-1", limit);
}

OutgoingRecord letter(const PendingRecord& p, DeadLetterShape shape) {
    return make_dead_letter(p, "payments.dlq", "billing", "refused", "evt-1", shape);
}

}  // namespace

TEST_CASE("a dead letter that fits the producer's limit is the whole record") {
    CHECK(shape_for(failed_record(), kDefaultMaxMessageBytes) == DeadLetterShape::original);
}

TEST_CASE("a dead letter too large only by its value leaves the value out and keeps the key") {
    PendingRecord p = failed_record();
    p.record.value = std::string(999900, 'v');
    const auto shape = shape_for(p, kDefaultMaxMessageBytes);
    CHECK(shape == DeadLetterShape::value_omitted);
    const auto out = letter(p, shape);
    CHECK(out.key == p.record.key);
    CHECK(wire_size(out) <= kDefaultMaxMessageBytes);
}

TEST_CASE(
    "a dead letter of a record with a 1 MB key fits: the key is replaced by its size and digest") {
    PendingRecord p = failed_record();
    const std::string key(1024 * 1024, 'k');
    p.record.key = key;
    const auto shape = shape_for(p, kDefaultMaxMessageBytes);
    CHECK(shape == DeadLetterShape::digested);
    const auto out = letter(p, shape);
    CHECK(wire_size(out) <= kDefaultMaxMessageBytes);
    CHECK_FALSE(out.key.has_value());
    CHECK(out.value.empty());
    CHECK(only_header(out, "exo-key-omitted") == omitted_bytes_text(key.size(), sha256_hex(key)));
    CHECK(only_header(out, "exo-key-omitted")->starts_with("1048576 bytes sha256:"));
    CHECK(only_header(out, "exo-value-omitted") == std::to_string(p.record.value.size()));
    // The small headers stay as they were; exo's say where the record is.
    CHECK(header_values(out, "trace-id").size() == 2);
    CHECK(only_header(out, "exo-original-offset") == "9000000001");
    CHECK(only_header(out, "exo-idempotency-key") == "evt-1");
}

TEST_CASE("a dead letter of a record with a 1 MB header replaces that header by its digest") {
    PendingRecord p = failed_record();
    const std::string big(1024 * 1024, 'h');
    p.record.headers.push_back({"blob", big});
    const auto shape = shape_for(p, kDefaultMaxMessageBytes);
    CHECK(shape == DeadLetterShape::digested);
    const auto out = letter(p, shape);
    CHECK(wire_size(out) <= kDefaultMaxMessageBytes);
    CHECK(out.key == p.record.key);  // a small key is kept
    CHECK(header_values(out, "blob").empty());
    CHECK(only_header(out, "exo-header-omitted") ==
          "blob: " + omitted_bytes_text(big.size(), sha256_hex(big)));
    CHECK(header_values(out, "trace-id").size() == 2);
}

TEST_CASE("a dead letter of a record with many small headers over the limit summarises them all") {
    PendingRecord p = failed_record();
    for (int i = 0; i < 100000; ++i)
        p.record.headers.push_back({"header-" + std::to_string(i), "v"});
    const auto shape = shape_for(p, kDefaultMaxMessageBytes);
    CHECK(shape == DeadLetterShape::headers_omitted);
    const auto out = letter(p, shape);
    CHECK(wire_size(out) <= kDefaultMaxMessageBytes);
    CHECK(header_values(out, "header-1").empty());
    CHECK(only_header(out, "exo-headers-omitted")->starts_with("100003 headers, "));
}

TEST_CASE("the smallest dead letter fits a small producer limit whatever the record's size") {
    PendingRecord p = failed_record();
    p.record.key = std::string(1024 * 1024, 'k');
    p.record.value = std::string(1024 * 1024, 'v');
    p.record.headers.push_back({std::string(5000, 'n'), std::string(1024 * 1024, 'h')});
    const auto out = letter(p, shape_for(p, 10000));
    CHECK(wire_size(out) <= 10000);
    CHECK(header_values(out, "exo-original-topic").size() == 1);
    CHECK(header_values(out, "exo-key-omitted").size() == 1);
}
