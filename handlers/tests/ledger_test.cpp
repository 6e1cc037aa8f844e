// The ledger handler's own tests, written the way a team tests its handler:
// against the installed exo only (<exo/testing.hpp>) and a real PostgreSQL named
// by EXO_POSTGRES_URI (scripts/services.sh writes it into its env file). Each kit
// works in a fresh schema of its own, so the tests need no clean-up.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <exo/testing.hpp>
#include <memory>
#include <stdexcept>
#include <string>

#include "ledger.hpp"
#include "ledger_migrations.hpp"

using exo::testing::HandlerKit;
using exo::testing::Outcome;
using exo::testing::TestRecord;

namespace {

// Missing is a failure, not a skip: a test run that checks nothing must not pass.
std::string postgres_uri() {
    const char* uri = std::getenv("EXO_POSTGRES_URI");
    if (uri == nullptr || *uri == '\0')
        throw std::runtime_error(
            "EXO_POSTGRES_URI is not set: start PostgreSQL with "
            "scripts/services.sh and source its services.env");
    return uri;
}

// The ledger as exo.yaml binds it: key /eventId, a strict sequence per account.
HandlerKit ledger_kit() {
    exo::testing::KitOptions options{.key = "json:/eventId",
                                     .sequence_entity = "/accountId",
                                     .sequence_value = "/sequenceId",
                                     .strict = true,
                                     .handler_name = "ledger"};
    for (const auto& m : exo::handlers::kLedgerMigrations)
        options.migrations.emplace_back(m.name, m.sql);
    return HandlerKit(postgres_uri(), std::make_unique<exo::handlers::LedgerHandler>(), options);
}

TestRecord payment(const std::string& event, const std::string& account, const std::string& type,
                   std::int64_t amount, std::int64_t sequence) {
    nlohmann::json p{{"eventId", event},
                     {"accountId", account},
                     {"type", type},
                     {"amount", amount},
                     {"sequenceId", sequence}};
    return {.value = p.dump()};
}

std::int64_t balance(HandlerKit& kit, const std::string& account) {
    return kit.query_value<std::int64_t>(
        "SELECT coalesce(sum(balance), 0) FROM accounts WHERE account_id = $1", account);
}

std::int64_t entries(HandlerKit& kit) {
    return kit.query_value<std::int64_t>("SELECT count(*) FROM ledger_entries");
}

}  // namespace

TEST_CASE("a credit is applied to its account") {
    auto kit = ledger_kit();
    CHECK(kit.deliver(payment("e1", "acc-1", "CREDIT", 100, 1)) == Outcome::applied);
    CHECK(balance(kit, "acc-1") == 100);
    CHECK(entries(kit) == 1);
}

TEST_CASE("a payment delivered twice is applied once") {
    auto kit = ledger_kit();
    CHECK(kit.deliver(payment("e1", "acc-1", "CREDIT", 100, 1)) == Outcome::applied);
    CHECK(kit.deliver(payment("e1", "acc-1", "CREDIT", 100, 1)) == Outcome::duplicate);
    CHECK(balance(kit, "acc-1") == 100);
    CHECK(entries(kit) == 1);
}

TEST_CASE("a payment that overtakes its predecessor waits, then applies after it") {
    auto kit = ledger_kit();
    const auto debit = payment("e2", "acc-1", "DEBIT", 30, 2);
    CHECK(kit.deliver(debit) == Outcome::parked);
    CHECK(entries(kit) == 0);
    CHECK(kit.deliver(payment("e1", "acc-1", "CREDIT", 100, 1)) == Outcome::applied);
    CHECK(kit.deliver(debit) == Outcome::applied);  // tried again, as the daemon does
    CHECK(balance(kit, "acc-1") == 70);
    CHECK(kit.deliver(payment("e0", "acc-1", "CREDIT", 5, 1)) == Outcome::stale);
    CHECK(balance(kit, "acc-1") == 70);
}

TEST_CASE("a negative amount is dead-lettered and changes nothing") {
    auto kit = ledger_kit();
    auto d = kit.deliver(payment("e1", "acc-1", "CREDIT", -5, 1));
    CHECK(d == Outcome::dead_lettered);
    CHECK(d.reason == "payment amount must not be negative");
    CHECK(entries(kit) == 0);
    // Its sequence number did not move: the account's first real payment applies.
    CHECK(kit.deliver(payment("e2", "acc-1", "CREDIT", 40, 1)) == Outcome::applied);
    CHECK(balance(kit, "acc-1") == 40);
}

TEST_CASE(
    "each applied payment emits one ledger.applied record, a duplicate or a refused one none") {
    auto kit = ledger_kit();
    CHECK(kit.deliver(payment("e1", "acc-1", "CREDIT", 100, 1)) == Outcome::applied);
    CHECK(kit.deliver(payment("e1", "acc-1", "CREDIT", 100, 1)) == Outcome::duplicate);
    CHECK(kit.deliver(payment("e2", "acc-1", "DEBIT", -1, 2)) == Outcome::dead_lettered);
    CHECK(kit.deliver(payment("e3", "acc-1", "DEBIT", 30, 2)) == Outcome::applied);
    auto rows = kit.query(
        "SELECT convert_from(message_key, 'UTF8'), convert_from(value, 'UTF8') FROM exo_outbox"
        " WHERE topic = 'ledger.applied' ORDER BY seq");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0][0].as<std::string>() == "acc-1");
    auto first = nlohmann::json::parse(rows[0][1].as<std::string>());
    CHECK(first.at("eventId") == "e1");
    CHECK(first.at("amount") == 100);
    CHECK(nlohmann::json::parse(rows[1][1].as<std::string>()).at("eventId") == "e3");
}
