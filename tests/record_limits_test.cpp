// What flow control counts for a record and the bound on its headers:
// scheduling/record_limits.hpp. No servers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "protocol/dead_letter.hpp"
#include "scheduling/pending_record.hpp"
#include "scheduling/record_limits.hpp"

using namespace exo;

namespace {

PendingRecord with_headers(std::size_t n, std::optional<std::string> key = "acc-7") {
    PendingRecord p;
    p.record.topic = Topic{"payments"};
    p.record.partition = Partition{2};
    p.record.offset = Offset{41};
    p.record.key = std::move(key);
    p.record.value = R"({"eventId":"e-1"})";
    for (std::size_t i = 0; i < n; ++i) p.record.headers.push_back({"h", std::nullopt});
    return p;
}

}  // namespace

TEST_SUITE("record limits") {
    TEST_CASE("a record's bytes are its key, value, header names and values and fixed costs") {
        Record r;
        r.key = "0123456789";                   // 10
        r.value = std::string(1000, 'v');       // 1000
        r.headers = {{"trace", "abcdef"},       // 5 + 6
                     {"empty", std::nullopt}};  // 5
        CHECK(memory_bytes(r) ==
              kRecordOverheadBytes + 10 + 1000 + 11 + 5 + 2 * kHeaderOverheadBytes);
    }

    TEST_CASE("a record with no key, value or headers still costs its fixed overhead") {
        CHECK(memory_bytes(Record{}) == kRecordOverheadBytes);
        CHECK(kRecordOverheadBytes >= sizeof(PendingRecord));
    }

    TEST_CASE("a flood of empty headers counts a header's overhead each, far above its wire size") {
        Record r;
        r.headers.assign(100000, RecordHeader{"", std::nullopt});
        CHECK(memory_bytes(r) == kRecordOverheadBytes + 100000 * kHeaderOverheadBytes);
        CHECK(kHeaderOverheadBytes >= 64);  // two strings in place
    }

    TEST_CASE("a record at the header bound keeps its headers and no verdict") {
        auto p = with_headers(1000);
        CHECK_FALSE(refuse_excess_headers(p, 1000));
        CHECK(p.record.headers.size() == 1000);
        CHECK_FALSE(p.dead_letter);
        CHECK(p.headers_omitted == 0);
    }

    TEST_CASE(
        "a record over the header bound is judged a dead letter naming the count, the bound and "
        "its key, and its headers are freed") {
        auto p = with_headers(1001);
        CHECK(refuse_excess_headers(p, 1000));
        REQUIRE(p.dead_letter);
        const auto& why = p.dead_letter->reason;
        CHECK(why.find("1001 headers") != std::string::npos);
        CHECK(why.find("pipeline.max_headers_per_record (1000)") != std::string::npos);
        CHECK(why.find("Kafka key 'acc-7'") != std::string::npos);
        CHECK_FALSE(p.dead_letter->record_key);
        CHECK(p.headers_omitted == 1001);
        CHECK(p.record.headers.empty());
        CHECK(p.record.headers.capacity() == 0);
        CHECK(memory_bytes(p.record) == kRecordOverheadBytes + 5 + p.record.value.size());
    }

    TEST_CASE("a keyless record over the header bound says it has no Kafka key") {
        auto p = with_headers(3, std::nullopt);
        CHECK(refuse_excess_headers(p, 2));
        REQUIRE(p.dead_letter);
        CHECK(p.dead_letter->reason.find("no Kafka key") != std::string::npos);
    }

    TEST_CASE("the dead letter of a record whose headers were dropped carries their count only") {
        auto p = with_headers(5);
        p.record.headers[0] = {"traceparent",
                               "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"};
        REQUIRE(refuse_excess_headers(p, 4));
        const auto letter = make_dead_letter(p, "payments.dlq", "g", p.dead_letter->reason, "");
        std::size_t omitted = 0, copies = 0;
        for (const auto& h : letter.headers) {
            if (h.name == "exo-headers-omitted") {
                ++omitted;
                CHECK(h.value == "5");
            }
            if (h.name == "h") ++copies;
        }
        CHECK(omitted == 1);
        CHECK(copies == 0);
        CHECK(letter.value == p.record.value);
    }
}
