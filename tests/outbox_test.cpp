// The outbox's pure parts: what an emit accepts (outbox/outbox_message.cpp),
// the outbox: section of exo.yaml, and hex both ways. No servers.
#include <doctest/doctest.h>

#include <exo/outbox.hpp>
#include "core/text.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;
using namespace std::chrono_literals;

namespace {

std::string problem_of(const OutboxMessage& m) {
    return outbox_message_problem(m).value_or("");
}

}  // namespace

TEST_SUITE("outbox") {
    TEST_CASE("any bytes pass as key, value and header value") {
        const std::string bytes("\0\xFF\xC0\x80 \xED\xA0\x80\0", 9);  // NULs inside and last
        CHECK_FALSE(outbox_message_problem({"ledger.applied", bytes, bytes, {{"h", bytes}}}));
        CHECK_FALSE(outbox_message_problem({"a", std::nullopt, "", {{"h", std::nullopt}}}));
    }

    TEST_CASE("an illegal topic name is refused naming the topic and the rule") {
        CHECK(problem_of({"", "k", "v", {}}).find("must not be empty") != std::string::npos);
        CHECK(problem_of({"has space", "k", "v", {}}).find("'has space' is not a Kafka topic") !=
              std::string::npos);
        CHECK(problem_of({"..", "k", "v", {}}) != "");
        CHECK(problem_of({std::string(250, 'a'), "k", "v", {}}) != "");
    }

    TEST_CASE("a header name PostgreSQL text cannot store, or exo's own, is refused") {
        CHECK(problem_of({"t", "k", "v", {{std::string("a\0b", 3), "x"}}})
                  .find("not UTF-8 text without NUL") != std::string::npos);
        CHECK(problem_of({"t", "k", "v", {{"\xFF", "x"}}}) != "");
        CHECK(problem_of({"t", "k", "v", {{"", "x"}}}).find("empty name") != std::string::npos);
        CHECK(problem_of({"t", "k", "v", {{"exo-outbox-id", "1"}}}).find("reserved") !=
              std::string::npos);
    }

    TEST_CASE(
        "the wire size counts what librdkafka counts: framing, key, value, each header with its "
        "varint lengths, and exo-outbox-id") {
        // 36 bytes of framing; exo-outbox-id: 1 + 13 + 1 + 36.
        CHECK(outbox_wire_size({"t", std::nullopt, "", {}}) == 36 + 51);
        CHECK(outbox_wire_size({"t", "key", "value", {}}) == 36 + 3 + 5 + 51);
        // A 64-byte name's zigzag length takes two bytes; a null value one.
        CHECK(outbox_wire_size({"t", std::nullopt, "", {{std::string(64, 'n'), std::nullopt}}}) ==
              36 + 51 + 2 + 64 + 1);
        CHECK(outbox_wire_size({"t", std::nullopt, "", {{"h", std::string(100, 'v')}}}) ==
              36 + 51 + 1 + 1 + 2 + 100);
    }

    TEST_CASE("a record over the producer's message.max.bytes is refused at emit") {
        const std::size_t fits = kDefaultMaxMessageBytes - 36 - 51 - 1;
        CHECK(problem_of({"t", "k", std::string(fits, 'x'), {}}) == "");
        CHECK(problem_of({"t", "kk", std::string(fits, 'x'), {}})
                  .find("over the producer's message.max.bytes of 1000000") != std::string::npos);
        CHECK(outbox_message_problem({"t", "k", std::string(200, 'x'), {}}, 200));
        CHECK_FALSE(outbox_message_problem({"t", "k", std::string(200, 'x'), {}}, 288));
    }

    TEST_CASE(
        "a record that in a batch of its own is over its topic's max.message.bytes, as the "
        "broker reported it, is refused at emit naming the topic, its size and the limit") {
        EmitLimits limits;
        limits.set_topic_bytes("small", 2000);
        // 36 framing + 1 key + 51 exo-outbox-id + 61 batch header + the value.
        const std::size_t fits = 2000 - 36 - 1 - 51 - kRecordBatchOverhead;
        CHECK_FALSE(outbox_message_problem({"small", "k", std::string(fits, 'x'), {}}, limits));
        const auto over =
            outbox_message_problem({"small", "k", std::string(fits + 1, 'x'), {}}, limits)
                .value_or("");
        CHECK(over.find("topic 'small''s max.message.bytes of 2000") != std::string::npos);
        CHECK(over.find("1940 bytes on the wire") != std::string::npos);
        CHECK(over.find("2001 with a record batch's header") != std::string::npos);
        // Another topic keeps the producer's limit only.
        CHECK_FALSE(outbox_message_problem({"other", "k", std::string(5000, 'x'), {}}, limits));
        // A topic limit above the producer's does not lift the producer's.
        EmitLimits low(1000);
        low.set_topic_bytes("big", 5000000);
        CHECK(outbox_message_problem({"big", "k", std::string(1000, 'x'), {}}, low)
                  .value_or("")
                  .find("over the producer's message.max.bytes of 1000") != std::string::npos);
    }

    TEST_CASE("outbox.topics lists the topics emitted to, each once and a legal name") {
        const auto c =
            parse(std::string(kMinimal) + "outbox:\n  topics: [ledger.applied, \"audit\"]\n");
        CHECK(c.outbox.topics == std::vector<std::string>{"ledger.applied", "audit"});
        CHECK(parse(kMinimal).outbox.topics.empty());
        const auto errors =
            errors_of(std::string(kMinimal) + "outbox:\n  topics: [a, \"has space\", a]\n");
        CHECK(errors.find("outbox.topics[1]") != std::string::npos);
        CHECK(errors.find("outbox.topics[2]") != std::string::npos);
        CHECK(errors.find("already listed") != std::string::npos);
    }

    TEST_CASE("hex round-trips any bytes and refuses malformed text") {
        const std::string bytes("\0\x01\xAB\xFF", 4);
        CHECK(hex_bytes(bytes) == "0001abff");
        CHECK(bytes_of_hex("0001ABff") == bytes);
        CHECK_FALSE(bytes_of_hex("abc"));
        CHECK_FALSE(bytes_of_hex("zz"));
        CHECK(bytes_of_hex("") == std::string());
    }

    TEST_CASE("the outbox section sets every field") {
        const auto c = parse(std::string(kMinimal) +
                             "outbox:\n  enabled: false\n  batch_size: 20\n"
                             "  max_round_bytes: 4096\n"
                             "  poll_interval_ms: 250\n  retention_days: 0\n");
        CHECK_FALSE(c.outbox.enabled);
        CHECK(c.outbox.batch_size == 20);
        CHECK(c.outbox.max_round_bytes == 4096);
        CHECK(c.outbox.poll_interval == 250ms);
        CHECK(c.outbox.retention.count() == 0);
        const auto d = parse(kMinimal);
        CHECK(d.outbox.enabled);
        CHECK(d.outbox.batch_size == 2000);
        CHECK(d.outbox.max_round_bytes == 16u * 1024 * 1024);
        CHECK(d.outbox.emit_limits.producer_bytes() == kDefaultMaxMessageBytes);
        CHECK(d.outbox.retention == std::chrono::hours(24 * 7));
    }

    TEST_CASE("an emit is checked against the message.max.bytes the relay's producer is given") {
        std::string yaml(kMinimal);
        yaml.replace(yaml.find("  group_id"), 0, "  properties:\n    message.max.bytes: 2000000\n");
        CHECK(parse(yaml).outbox.emit_limits.producer_bytes() == 2000000);
    }

    TEST_CASE("bad outbox values are all reported with their path and line") {
        const auto errors =
            errors_of(std::string(kMinimal) +
                      "outbox:\n  enabled: maybe\n  batch_size: 0\n  max_round_bytes: 0\n"
                      "  poll_interval_ms: -1\n  retention_days: x\n"
                      "  batch_sise: 3\n");
        CHECK(errors.find("outbox.enabled") != std::string::npos);
        CHECK(errors.find("expected one of: true, false") != std::string::npos);
        CHECK(errors.find("outbox.batch_size") != std::string::npos);
        CHECK(errors.find("outbox.poll_interval_ms") != std::string::npos);
        CHECK(errors.find("outbox.max_round_bytes") != std::string::npos);
        CHECK(errors.find("outbox.retention_days") != std::string::npos);
        CHECK(errors.find("did you mean 'batch_size'") != std::string::npos);
        CHECK(errors.find("exo.yaml:12") != std::string::npos);
    }
}
