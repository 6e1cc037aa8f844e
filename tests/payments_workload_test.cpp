// The sample payments and their expected result: handlers/payments_workload.hpp.
// No servers.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "payments_workload.hpp"

using namespace exo;

namespace {

WorkloadOptions options(int count, double ratio, int partitions, std::uint64_t seed = 42) {
    WorkloadOptions o;
    o.count = count;
    o.accounts = 20;
    o.duplicate_ratio = ratio;
    o.partitions = partitions;
    o.seed = seed;
    return o;
}

bool same_payment(const Payment& a, const Payment& b) {
    return a.event_id == b.event_id && a.account_id == b.account_id && a.type == b.type &&
           a.amount == b.amount && a.sequence_id == b.sequence_id && a.json() == b.json();
}

}  // namespace

TEST_SUITE("generate_payments") {
    TEST_CASE("the same seed gives the same messages") {
        auto a = generate_payments(options(500, 0.2, 4));
        auto b = generate_payments(options(500, 0.2, 4));
        REQUIRE(a.messages.size() == b.messages.size());
        for (std::size_t i = 0; i < a.messages.size(); ++i) {
            CHECK(same_payment(a.messages[i].payment, b.messages[i].payment));
            CHECK(a.messages[i].partition == b.messages[i].partition);
            CHECK(a.messages[i].duplicate == b.messages[i].duplicate);
        }
        CHECK(a.expected_balances == b.expected_balances);
        CHECK(a.unique_events == b.unique_events);
        CHECK(a.duplicates == b.duplicates);
    }

    TEST_CASE("a different seed gives different payments and event ids") {
        auto a = generate_payments(options(200, 0.1, 0, 1));
        auto b = generate_payments(options(200, 0.1, 0, 2));
        CHECK(a.expected_balances != b.expected_balances);
        std::set<std::string> ids_a;
        for (const auto& m : a.messages) ids_a.insert(m.payment.event_id);
        for (const auto& m : b.messages) CHECK(ids_a.count(m.payment.event_id) == 0);
    }

    TEST_CASE("count is the number of messages, duplicates included") {
        auto w = generate_payments(options(1000, 0.1, 3));
        CHECK(w.messages.size() == 1000);
        CHECK(w.unique_events + w.duplicates == 1000);
        std::size_t flagged = 0;
        for (const auto& m : w.messages) flagged += m.duplicate ? 1 : 0;
        CHECK(flagged == w.duplicates);
    }

    TEST_CASE("each account's originals carry sequence ids 1, 2, 3... in message order") {
        auto w = generate_payments(options(2000, 0.15, 4));
        std::map<std::string, std::int64_t> last;
        for (const auto& m : w.messages) {
            if (m.duplicate) continue;
            CHECK(m.payment.sequence_id == last[m.payment.account_id] + 1);
            last[m.payment.account_id] = m.payment.sequence_id;
        }
        CHECK(last.size() > 1);
        CHECK(last.size() <= 20);
    }

    TEST_CASE("original event ids are unique") {
        auto w = generate_payments(options(2000, 0.1, 0));
        std::set<std::string> ids;
        for (const auto& m : w.messages)
            if (!m.duplicate) CHECK(ids.insert(m.payment.event_id).second);
        CHECK(ids.size() == w.unique_events);
    }

    TEST_CASE("every duplicate is an exact copy of an earlier original") {
        auto w = generate_payments(options(2000, 0.2, 4));
        std::map<std::string, Payment> originals;
        std::size_t checked = 0;
        for (const auto& m : w.messages) {
            if (!m.duplicate) {
                originals.emplace(m.payment.event_id, m.payment);
                continue;
            }
            auto it = originals.find(m.payment.event_id);
            REQUIRE_MESSAGE(it != originals.end(),
                            "duplicate " << m.payment.event_id << " before its original");
            CHECK(same_payment(m.payment, it->second));
            ++checked;
        }
        CHECK(checked == w.duplicates);
        CHECK(checked > 0);
    }

    TEST_CASE("the share of duplicates is close to the ratio") {
        for (std::uint64_t seed : {1u, 42u, 777u}) {
            auto w = generate_payments(options(2000, 0.1, 0, seed));
            CHECK(w.duplicates >= 140);  // 200 expected; about 4.5 standard deviations
            CHECK(w.duplicates <= 260);
        }
        auto heavy = generate_payments(options(2000, 0.5, 0));
        CHECK(heavy.duplicates >= 900);
        CHECK(heavy.duplicates <= 1100);
    }

    TEST_CASE("a ratio of zero sends no duplicates") {
        auto w = generate_payments(options(500, 0.0, 4));
        CHECK(w.duplicates == 0);
        CHECK(w.unique_events == 500);
        for (const auto& m : w.messages) {
            CHECK_FALSE(m.duplicate);
            CHECK_FALSE(m.partition.has_value());
        }
    }

    TEST_CASE("the first message is never a duplicate, even at ratio 1") {
        auto w = generate_payments(options(50, 1.0, 0));
        REQUIRE_FALSE(w.messages.empty());
        CHECK_FALSE(w.messages.front().duplicate);
        CHECK(w.unique_events == 1);
        CHECK(w.duplicates == 49);
    }

    TEST_CASE("without several partitions no message names a partition") {
        for (int partitions : {0, 1}) {
            auto w = generate_payments(options(1000, 0.3, partitions));
            REQUIRE(w.duplicates > 0);
            for (const auto& m : w.messages) CHECK_FALSE(m.partition.has_value());
        }
    }

    TEST_CASE("cross-partition duplicates name a valid partition and come after all originals") {
        auto w = generate_payments(options(2000, 0.2, 4));
        std::size_t with_partition = 0;
        bool seen_replay = false;
        std::set<int> used;
        for (const auto& m : w.messages) {
            if (m.partition) {
                seen_replay = true;
                ++with_partition;
                CHECK(m.duplicate);
                CHECK(*m.partition >= 0);
                CHECK(*m.partition < 4);
                used.insert(*m.partition);
            } else {
                CHECK_FALSE(seen_replay);  // an unpartitioned message after a replay
            }
        }
        CHECK(with_partition > 0);
        CHECK(with_partition < w.duplicates);  // some duplicates stay in-stream
        CHECK(used.size() > 1);
    }

    TEST_CASE("expected balances are the signed sums of the unique events") {
        auto w = generate_payments(options(2000, 0.2, 4));
        std::map<std::string, std::int64_t> unique_sum, all_sum;
        for (const auto& m : w.messages) {
            all_sum[m.payment.account_id] += m.payment.signed_amount();
            if (!m.duplicate) unique_sum[m.payment.account_id] += m.payment.signed_amount();
        }
        CHECK(w.expected_balances == unique_sum);
        CHECK(w.expected_balances != all_sum);  // duplicates must not count
    }

    TEST_CASE("credits add and debits subtract") {
        Payment credit{"e1", "a", "CREDIT", 250, 1};
        Payment debit{"e2", "a", "DEBIT", 250, 2};
        CHECK(credit.signed_amount() == 250);
        CHECK(debit.signed_amount() == -250);
    }

    TEST_CASE("payments are CREDIT or DEBIT with a positive amount") {
        auto w = generate_payments(options(1000, 0.1, 0));
        std::set<std::string> types;
        for (const auto& m : w.messages) {
            CHECK((m.payment.type == "CREDIT" || m.payment.type == "DEBIT"));
            CHECK(m.payment.amount > 0);
            types.insert(m.payment.type);
        }
        CHECK(types.size() == 2);
    }

    TEST_CASE("the JSON form carries the fields the ledger handler reads") {
        Payment p{"evt-42-7", "acc-0003", "DEBIT", 1234, 9};
        auto doc = nlohmann::json::parse(p.json());
        CHECK(doc.at("eventId") == "evt-42-7");
        CHECK(doc.at("accountId") == "acc-0003");
        CHECK(doc.at("type") == "DEBIT");
        CHECK(doc.at("amount") == 1234);
        CHECK(doc.at("sequenceId") == 9);
    }

    TEST_CASE("event ids carry the prefix, so runs with different prefixes do not collide") {
        auto o = options(10, 0.0, 0);
        o.event_prefix = "run7";
        auto w = generate_payments(o);
        for (const auto& m : w.messages) CHECK(m.payment.event_id.rfind("run7-", 0) == 0);
    }
}
