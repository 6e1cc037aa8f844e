// exo::testing::HandlerKit (exo/testing.hpp) against the real PostgreSQL: every
// outcome a delivery can have, each with a tiny handler written here, and the
// rows the daemon would leave behind. Each kit works in a schema of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <any>
#include <exo/errors.hpp>
#include <exo/outside_transaction.hpp>
#include <exo/testing.hpp>
#include <functional>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "support.hpp"
#include "testing_example.hpp"

using exo::HandlerContext;
using exo::testing::Delivery;
using exo::testing::HandlerKit;
using exo::testing::KitOptions;
using exo::testing::Outcome;
using exo::testing::TestRecord;

namespace {

// A handler whose handle() is the lambda a test gives.
class FnHandler final : public exo::Handler {
public:
    explicit FnHandler(std::function<void(HandlerContext&)> fn) : fn_(std::move(fn)) {}
    void handle(HandlerContext& ctx) override { fn_(ctx); }

private:
    std::function<void(HandlerContext&)> fn_;
};

std::unique_ptr<exo::Handler> handler(std::function<void(HandlerContext&)> fn) {
    return std::make_unique<FnHandler>(std::move(fn));
}

// A handler with work outside its transaction: before_transaction() is `outside`.
class FnOutsideHandler final : public exo::Handler, public exo::OutsideTransaction {
public:
    FnOutsideHandler(std::function<void(exo::OutsideContext&)> outside,
                     std::function<void(HandlerContext&)> fn)
        : outside_(std::move(outside)), fn_(std::move(fn)) {}
    void before_transaction(exo::OutsideContext& ctx) const override { outside_(ctx); }
    void handle(HandlerContext& ctx) override { fn_(ctx); }

private:
    std::function<void(exo::OutsideContext&)> outside_;
    std::function<void(HandlerContext&)> fn_;
};

const std::pair<std::string, std::string> kNotes{
    "0100_notes.sql", "CREATE TABLE notes (id text PRIMARY KEY, body text NOT NULL)"};

// The usual effect: one row per record, keyed by the payload's "id".
void insert_note(HandlerContext& ctx) {
    const auto& doc = ctx.json();
    ctx.transaction().exec_params("INSERT INTO notes (id, body) VALUES ($1, $2)",
                                  doc.at("id").get<std::string>(), doc.value("body", ""));
}

KitOptions notes(KitOptions o = {}) {
    o.migrations.push_back(kNotes);
    return o;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

long count(HandlerKit& kit, const std::string& table) {
    return kit.query_value<long>("SELECT count(*) FROM " + table);
}

std::string stored_outcome(HandlerKit& kit, const std::string& key) {
    auto rows = kit.query("SELECT outcome FROM exo_processed WHERE idempotency_key = $1", key);
    return rows.empty() ? "none" : rows[0][0].as<std::string>();
}

}  // namespace

TEST_CASE(
    "the handler kit applies a record once and answers its redelivery as a duplicate with "
    "the stored result") {
    int calls = 0;
    HandlerKit kit(exo::testing::postgres_uri(), handler([&](HandlerContext& ctx) {
                       ++calls;
                       insert_note(ctx);
                       ctx.set_result("noted " + ctx.idempotency_key());
                   }),
                   notes({.key = "json:/id"}));
    const TestRecord note{.value = R"({"id": "n-1", "body": "hello"})"};

    Delivery first = kit.deliver(note);
    CHECK(first == Outcome::applied);
    CHECK(first.key == "n-1");
    CHECK(first.result == "noted n-1");
    CHECK(first.attempt == 1);
    Delivery again = kit.deliver(note);
    CHECK(again == Outcome::duplicate);
    CHECK(again.reason == "APPLIED");
    CHECK(again.result == "noted n-1");
    CHECK(again.offset == first.offset + 1);  // another Kafka record with the same event id
    CHECK(calls == 1);
    CHECK(count(kit, "notes") == 1);
    CHECK(stored_outcome(kit, "n-1") == "APPLIED");
}

TEST_CASE(
    "the handler kit derives keys from a header, a JSON pointer or the coordinates, as the "
    "daemon does") {
    SUBCASE("a header") {
        HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note),
                       notes({.key = "header:event-id"}));
        auto d = kit.deliver({.value = R"({"id": "a"})", .headers = {{"event-id", "h-1"}}});
        CHECK(d == Outcome::applied);
        CHECK(d.key == "h-1");
        auto missing = kit.deliver({.value = R"({"id": "b"})"});
        CHECK(missing == Outcome::dead_lettered);
        CHECK(contains(missing.reason, "no header 'event-id'"));
        CHECK(missing.key.empty());
        CHECK(count(kit, "exo_processed") == 1);  // no key, no row: like the daemon
    }
    SUBCASE("the coordinates: only a redelivery of the same Kafka record is a duplicate") {
        HandlerKit kit(exo::testing::postgres_uri(), handler([](HandlerContext&) {}),
                       {.handler_name = "nothing"});
        auto a = kit.deliver({.value = "x", .topic = "t", .partition = 3});
        auto b = kit.deliver({.value = "x", .topic = "t", .partition = 3});
        CHECK(a.key == "t/3/0");
        CHECK(b.key == "t/3/1");
        CHECK(b == Outcome::applied);
        auto redelivered = kit.deliver({.value = "x", .topic = "t", .partition = 3, .offset = 0});
        CHECK(redelivered == Outcome::duplicate);
        CHECK(redelivered.key == "t/3/0");
    }
}

TEST_CASE(
    "the handler kit records an older sequence STALE in latest mode, without running the "
    "handler") {
    int calls = 0;
    HandlerKit kit(
        exo::testing::postgres_uri(), handler([&](HandlerContext& ctx) {
            ++calls;
            insert_note(ctx);
        }),
        notes({.key = "json:/id", .sequence_entity = "/entity", .sequence_value = "/seq"}));
    auto results = kit.deliver(std::vector<TestRecord>{
        {.value = R"({"id": "a", "entity": "e", "seq": 5})"},
        {.value = R"({"id": "b", "entity": "e", "seq": 3})"},
        {.value = R"({"id": "c", "entity": "e", "seq": 6})"},
    });
    REQUIRE(results.size() == 3);
    CHECK(results[0] == Outcome::applied);
    CHECK(results[1] == Outcome::stale);
    CHECK(results[2] == Outcome::applied);
    CHECK(calls == 2);
    CHECK(stored_outcome(kit, "b") == "STALE");
    CHECK(kit.query_value<long>("SELECT last_sequence FROM exo_sequences WHERE entity = 'e'") == 6);
}

TEST_CASE(
    "the handler kit parks a strict sequence that arrives early and applies it once its "
    "predecessor did") {
    HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note),
                   notes({.key = "json:/id",
                          .sequence_entity = "/entity",
                          .sequence_value = "/seq",
                          .strict = true}));
    const TestRecord second{.value = R"({"id": "s2", "entity": "e", "seq": 2})"};
    const TestRecord first{.value = R"({"id": "s1", "entity": "e", "seq": 1})"};

    Delivery parked = kit.deliver(second);
    CHECK(parked == Outcome::parked);
    CHECK(contains(parked.reason, "waiting for an earlier sequence of e"));
    CHECK(stored_outcome(kit, "s2") == "none");  // parking does not record the event
    CHECK(count(kit, "notes") == 0);
    CHECK(count(kit, "exo_sequence_gaps") == 1);  // its first sighting, as the daemon keeps it

    CHECK(kit.deliver(first) == Outcome::applied);
    Delivery retried = kit.deliver(second);
    CHECK(retried == Outcome::applied);
    CHECK(retried.offset == parked.offset);  // the same record, tried again
    CHECK(retried.attempt == 1);             // waiting is not a failed try
    CHECK(count(kit, "notes") == 2);
    CHECK(kit.deliver(first) == Outcome::duplicate);
}

TEST_CASE("the handler kit dead-letters a strict gap older than gap_timeout without a dedup row") {
    HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note),
                   notes({.key = "json:/id",
                          .sequence_entity = "/entity",
                          .sequence_value = "/seq",
                          .strict = true,
                          .gap_timeout = std::chrono::milliseconds(0)}));
    auto d = kit.deliver({.value = R"({"id": "s3", "entity": "e", "seq": 3})"});
    CHECK(d == Outcome::dead_lettered);
    CHECK(contains(d.reason, "never became next within 0 ms (gap_timeout)"));
    CHECK(stored_outcome(kit, "s3") == "none");  // a later copy may still apply
    CHECK(count(kit, "exo_sequence_gaps") == 0);
}

TEST_CASE(
    "the handler kit retries a failing record with a growing attempt, then dead-letters it "
    "after max_attempts with a DEAD_LETTERED row") {
    int calls = 0;
    HandlerKit kit(exo::testing::postgres_uri(), handler([&](HandlerContext& ctx) {
                       ++calls;
                       insert_note(ctx);  // rolled back with the record
                       throw exo::RetryableError("downstream busy");
                   }),
                   notes({.key = "json:/id", .max_attempts = 3}));
    const TestRecord note{.value = R"({"id": "r-1"})"};

    Delivery one = kit.deliver(note);
    CHECK(one == Outcome::retry);
    CHECK(one.reason == "downstream busy");
    CHECK(one.attempt == 1);
    Delivery two = kit.deliver(note);
    CHECK(two == Outcome::retry);
    CHECK(two.attempt == 2);
    CHECK(two.offset == one.offset);
    CHECK(stored_outcome(kit, "r-1") == "none");
    Delivery three = kit.deliver(note);
    CHECK(three == Outcome::dead_lettered);
    CHECK(three.attempt == 3);
    CHECK(three.reason == "gave up after 3 attempts: downstream busy");
    CHECK(calls == 3);
    CHECK(count(kit, "notes") == 0);
    CHECK(stored_outcome(kit, "r-1") == "DEAD_LETTERED");
    CHECK(kit.query_value<std::string>("SELECT result FROM exo_processed") == three.reason);

    Delivery later = kit.deliver(note);  // a new copy of the event: the dead letter answers
    CHECK(later == Outcome::duplicate);
    CHECK(later.reason == "DEAD_LETTERED");
    CHECK(later.result == three.reason);
    CHECK(calls == 3);
}

TEST_CASE(
    "the handler kit applies a record on the delivery after its failures, at the attempt "
    "the handler sees") {
    HandlerKit kit(exo::testing::postgres_uri(), handler([](HandlerContext& ctx) {
                       insert_note(ctx);
                       if (ctx.attempt() < 3) throw std::runtime_error("not yet");
                       ctx.set_result("attempt " + std::to_string(ctx.attempt()));
                   }),
                   notes({.key = "json:/id"}));
    const TestRecord note{.value = R"({"id": "late"})"};
    CHECK(kit.deliver(note) == Outcome::retry);
    CHECK(kit.deliver(note) == Outcome::retry);
    Delivery third = kit.deliver(note);
    CHECK(third == Outcome::applied);
    CHECK(third.result == "attempt 3");
    CHECK(count(kit, "notes") == 1);
}

TEST_CASE("the handler kit dead-letters a permanent failure at once, with its row") {
    HandlerKit kit(exo::testing::postgres_uri(), handler([](HandlerContext& ctx) {
                       insert_note(ctx);
                       throw exo::PermanentError("amount must not be negative");
                   }),
                   notes({.key = "json:/id"}));
    Delivery d = kit.deliver({.value = R"({"id": "p-1"})"});
    CHECK(d == Outcome::dead_lettered);
    CHECK(d.reason == "amount must not be negative");
    CHECK(d.attempt == 1);
    CHECK(count(kit, "notes") == 0);
    CHECK(stored_outcome(kit, "p-1") == "DEAD_LETTERED");
}

TEST_CASE(
    "the handler kit dead-letters a PostgreSQL data exception at once and retries other "
    "database errors") {
    SUBCASE("class 22: the data can never be stored") {
        HandlerKit kit(exo::testing::postgres_uri(), handler([](HandlerContext& ctx) {
                           ctx.transaction().exec("SELECT 'not a number'::int");
                       }),
                       {.key = "json:/id"});
        auto d = kit.deliver({.value = R"({"id": "x"})"});
        CHECK(d == Outcome::dead_lettered);
        CHECK(contains(d.reason, "invalid input syntax"));
    }
    SUBCASE("a unique violation may pass") {
        HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note),
                       notes({.key = "json:/id", .max_attempts = 1}));
        kit.query("INSERT INTO notes (id, body) VALUES ('taken', '')");
        auto d = kit.deliver({.value = R"({"id": "taken"})"});
        CHECK(d == Outcome::dead_lettered);
        CHECK(contains(d.reason, "gave up after 1 attempts: "));
        CHECK(contains(d.reason, "duplicate key"));
    }
}

TEST_CASE(
    "the handler kit blames a handler that swallows a database error, and nothing it wrote "
    "commits") {
    bool with_result = false;
    SUBCASE("noticed at the savepoint's release") {}
    SUBCASE("noticed when the result is stored") {
        with_result = true;
    }
    HandlerKit kit(exo::testing::postgres_uri(), handler([&](HandlerContext& ctx) {
                       insert_note(ctx);
                       try {
                           insert_note(ctx);  // the same id again
                       } catch (const pqxx::unique_violation&) {
                           // swallowed: the transaction is aborted now
                       }
                       if (with_result) ctx.set_result("done");
                   }),
                   notes({.key = "json:/id", .max_attempts = 2, .handler_name = "swallower"}));
    const TestRecord note{.value = R"({"id": "s-1"})"};
    Delivery d = kit.deliver(note);
    CHECK(d == Outcome::retry);
    CHECK(contains(d.reason, "handler 'swallower' caught a database error"));
    CHECK(count(kit, "notes") == 0);
    Delivery last = kit.deliver(note);
    CHECK(last == Outcome::dead_lettered);
    CHECK(contains(last.reason,
                   "gave up after 2 attempts: handler 'swallower' caught a database "
                   "error"));
    CHECK(count(kit, "notes") == 0);
    CHECK(stored_outcome(kit, "s-1") == "DEAD_LETTERED");
}

TEST_CASE("the handler kit counts a COMMIT that fails on a deferred constraint as a failed try") {
    HandlerKit kit(
        exo::testing::postgres_uri(), handler([](HandlerContext& ctx) {
            ctx.transaction().exec("INSERT INTO children (id, parent) VALUES ('c', 'none')");
        }),
        {.key = "json:/id",
         .max_attempts = 2,
         .migrations = {{"0100_family.sql",
                         "CREATE TABLE parents (id text PRIMARY KEY);"
                         "CREATE TABLE children (id text PRIMARY KEY, parent text "
                         "REFERENCES parents DEFERRABLE INITIALLY DEFERRED)"}}});
    const TestRecord record{.value = R"({"id": "d-1"})"};
    Delivery d = kit.deliver(record);
    CHECK(d == Outcome::retry);
    CHECK(contains(d.reason, "COMMIT failed: "));
    Delivery last = kit.deliver(record);
    CHECK(last == Outcome::dead_lettered);
    CHECK(contains(last.reason, "gave up after 2 attempts: COMMIT failed: "));
    CHECK(count(kit, "children") == 0);
    CHECK(stored_outcome(kit, "d-1") == "DEAD_LETTERED");
}

TEST_CASE("the handler kit dead-letters a payload that is not JSON") {
    SUBCASE("with a key read from the payload: no key, no row") {
        HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note),
                       notes({.key = "json:/id"}));
        Delivery d = kit.deliver({.value = "{not json"});
        CHECK(d == Outcome::dead_lettered);
        CHECK(contains(d.reason, "payload is not valid JSON"));
        CHECK(d.key.empty());
        CHECK(count(kit, "exo_processed") == 0);
    }
    SUBCASE("with a header key: ctx.json() fails in the handler, and the key is recorded") {
        HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note),
                       notes({.key = "header:id"}));
        Delivery d = kit.deliver({.value = "{not json", .headers = {{"id", "j-1"}}});
        CHECK(d == Outcome::dead_lettered);
        CHECK(contains(d.reason, "payload is not valid JSON"));
        CHECK(stored_outcome(kit, "j-1") == "DEAD_LETTERED");
    }
    SUBCASE("with a sequence field that is not a number") {
        HandlerKit kit(
            exo::testing::postgres_uri(), handler(insert_note),
            notes({.key = "json:/id", .sequence_entity = "/e", .sequence_value = "/seq"}));
        Delivery d = kit.deliver({.value = R"({"id": "q-1", "e": "x", "seq": "one"})"});
        CHECK(d == Outcome::dead_lettered);
        CHECK(contains(d.reason, "/seq must be an integer"));
        CHECK(stored_outcome(kit, "q-1") == "DEAD_LETTERED");
    }
}

TEST_CASE(
    "the handler kit treats a result PostgreSQL cannot store as permanent and anything "
    "thrown that is not a std::exception as retryable") {
    SUBCASE("a result that is not text") {
        HandlerKit kit(exo::testing::postgres_uri(),
                       handler([](HandlerContext& ctx) { ctx.set_result("\xff\xfe"); }),
                       {.key = "json:/id"});
        Delivery d = kit.deliver({.value = R"({"id": "b-1"})"});
        CHECK(d == Outcome::dead_lettered);
        CHECK(contains(d.reason, "set a result PostgreSQL cannot store"));
    }
    SUBCASE("a thrown int") {
        HandlerKit kit(exo::testing::postgres_uri(), handler([](HandlerContext&) { throw 42; }),
                       {.key = "json:/id", .handler_name = "thrower"});
        Delivery d = kit.deliver({.value = R"({"id": "i-1"})"});
        CHECK(d == Outcome::retry);
        CHECK(d.reason == "handler 'thrower' threw an exception that is not a std::exception");
    }
}

TEST_CASE("the handler kit answers a row lock held elsewhere with an uncounted RETRY") {
    // lock_timeout from the URI wins over the session default (5 s): a short wait.
    auto uri = exo::testing::postgres_uri();
    uri += (uri.find('?') == std::string::npos ? "?" : "&") +
           std::string("options=-clock_timeout%3D300");
    HandlerKit kit(uri, handler(insert_note), notes({.key = "json:/id"}));
    const TestRecord note{.value = R"({"id": "locked"})"};
    {
        pqxx::connection other(exo::testing::postgres_uri());
        pqxx::work tx(other);
        tx.exec("SET LOCAL search_path TO " + tx.quote_name(kit.schema()));
        tx.exec("INSERT INTO notes (id, body) VALUES ('locked', 'uncommitted')");
        Delivery d = kit.deliver(note);
        CHECK(d == Outcome::retry);
        CHECK(contains(d.reason, "a row lock is held elsewhere"));
        CHECK(d.attempt == 1);
    }  // rolled back
    Delivery d = kit.deliver(note);
    CHECK(d == Outcome::applied);
    CHECK(d.attempt == 1);
}

TEST_CASE(
    "a handler kit works in a schema of its own and drops it; without fresh_schema it uses "
    "the URI's") {
    auto schema_exists = [](const std::string& name) {
        pqxx::connection c(exo::testing::postgres_uri());
        pqxx::nontransaction tx(c);
        return tx.exec_params("SELECT 1 FROM pg_namespace WHERE nspname = $1", name).size() == 1;
    };
    std::string own;
    {
        HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note), notes());
        own = kit.schema();
        CHECK(own.rfind("exo_kit_", 0) == 0);
        CHECK(schema_exists(own));
        CHECK(kit.query_value<std::string>("SELECT current_schema()") == own);
    }
    CHECK_FALSE(schema_exists(own));

    std::string mine = exo::testing::unique_name("kit_mine");
    std::replace(mine.begin(), mine.end(), '-', '_');
    {
        pqxx::connection c(exo::testing::postgres_uri());
        pqxx::nontransaction(c).exec("CREATE SCHEMA " + mine);
    }
    const auto uri = exo::testing::postgres_uri() +
                     (exo::testing::postgres_uri().find('?') == std::string::npos ? "?" : "&") +
                     "options=-csearch_path%3D" + mine;
    {
        HandlerKit kit(uri, handler(insert_note),
                       notes({.key = "json:/id", .fresh_schema = false}));
        CHECK(kit.schema().empty());
        CHECK(kit.deliver({.value = R"({"id": "m"})"}) == Outcome::applied);
    }
    {
        HandlerKit kit(uri, handler(insert_note),
                       notes({.key = "json:/id", .fresh_schema = false}));
        CHECK(kit.deliver({.value = R"({"id": "m"})"}) == Outcome::duplicate);
    }
    pqxx::connection c(exo::testing::postgres_uri());
    pqxx::nontransaction(c).exec("DROP SCHEMA " + mine + " CASCADE");
}

TEST_CASE(
    "a handler kit refuses invalid options, naming each, and a handler whose prepare() "
    "fails") {
    auto attempt = [](KitOptions o) {
        try {
            HandlerKit kit(exo::testing::postgres_uri(), handler(insert_note), std::move(o));
        } catch (const exo::UsageError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    CHECK(contains(attempt({.key = "id"}), "key: expected \"coordinates\""));
    CHECK(contains(attempt({.key = "json:id"}), "starts with '/'"));
    const auto several = attempt({.sequence_entity = "/e", .max_attempts = 0});
    CHECK(contains(several, "give both or neither"));
    CHECK(contains(several, "max_attempts: must be at least 1"));
    CHECK(contains(attempt({.strict = true}), "strict: needs sequence_entity"));

    class Unprepared final : public exo::Handler {
        void prepare(pqxx::connection_base& c) override {
            pqxx::nontransaction(c).exec("SELECT 1 FROM no_such_table");
        }
        void handle(HandlerContext&) override {}
    };
    std::string what;
    try {
        HandlerKit kit(exo::testing::postgres_uri(), std::make_unique<Unprepared>(),
                       {.handler_name = "unprepared"});
    } catch (const std::runtime_error& e) {
        what = e.what();
    }
    CHECK(contains(what, "handler 'unprepared' failed in prepare()"));
}

TEST_CASE("handler options for a handler under test read like a binding's options") {
    const auto options = exo::testing::handler_options({{"currency", "EUR"}, {"limit", "lots"}});
    CHECK(options.string("currency") == "EUR");
    CHECK(options.integer("missing", 7) == 7);
    std::string what;
    try {
        options.integer("limit");
    } catch (const exo::OptionError& e) {
        what = e.what();
    }
    CHECK(contains(what, "kit options: options.limit: "));
    CHECK(contains(what, "'lots'"));
}

TEST_CASE("the test kit's example (exo/testing.hpp) runs as written") {
    CHECK(header_examples::greeting_kit_example(exo::testing::postgres_uri()));
}

TEST_CASE(
    "the handler kit hands a handler its record's trace: continued from a valid traceparent, "
    "else a new one") {
    std::vector<exo::TraceContext> seen;
    HandlerKit kit(exo::testing::postgres_uri(), handler([&](HandlerContext& ctx) {
                       seen.push_back(ctx.trace());
                       insert_note(ctx);
                   }),
                   notes({.key = "json:/id"}));
    const std::string upstream = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    CHECK(kit.deliver({.value = R"({"id": "t-1"})",
                       .headers = {{"traceparent", upstream}, {"tracestate", "congo=t61"}}}) ==
          Outcome::applied);
    CHECK(kit.deliver({.value = R"({"id": "t-2"})"}) == Outcome::applied);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(seen[0].parent_id == "00f067aa0ba902b7");
    CHECK(seen[0].tracestate == "congo=t61");
    CHECK(seen[0].traceparent() ==
          "00-4bf92f3577b34da6a3ce929d0e0e4736-" + seen[0].span_id + "-01");
    CHECK_FALSE(seen[1].continued());
    CHECK(seen[1].trace_id.size() == 32);
    CHECK(seen[1].trace_id != seen[0].trace_id);
}

TEST_CASE(
    "the handler kit runs before_transaction() outside the record's transaction, hands its value "
    "to handle(), and fails the record with what it throws") {
    std::vector<std::string> outside_calls;
    bool outside_in_transaction = false;
    std::string outside_trace, handle_trace;
    std::unique_ptr<HandlerKit> kit;  // the handler looks at the kit's connection
    auto outside = [&](exo::OutsideContext& ctx) {
        outside_calls.push_back(ctx.idempotency_key() + "#" + std::to_string(ctx.attempt()));
        outside_trace = ctx.trace().trace_id;
        // The kit's session, seen from another one: not inside the record's transaction.
        pqxx::connection observer(exo::testing::postgres_uri());
        pqxx::nontransaction look(observer);
        outside_in_transaction =
            outside_in_transaction ||
            look.exec_params1(
                    "SELECT state LIKE 'idle in transaction%' FROM pg_stat_activity "
                    "WHERE pid = $1",
                    kit->connection().backendpid())[0]
                .as<bool>();
        const auto& doc = ctx.json();
        if (doc.value("flaky", false) && ctx.attempt() == 1)
            throw exo::RetryableError("the quote service timed out");
        if (doc.value("refused", false)) throw exo::PermanentError("the quote service refused it");
        ctx.hand_over(std::string("quoted ") + doc.at("id").get<std::string>());
    };
    kit = std::make_unique<HandlerKit>(
        exo::testing::postgres_uri(),
        std::make_unique<FnOutsideHandler>(outside,
                                           [&](HandlerContext& ctx) {
                                               handle_trace = ctx.trace().trace_id;
                                               insert_note(ctx);
                                               ctx.set_result(
                                                   std::any_cast<std::string>(ctx.handed_over()));
                                           }),
        notes({.key = "json:/id"}));

    Delivery plain = kit->deliver({.value = R"({"id": "n-1"})"});
    CHECK(plain == Outcome::applied);
    CHECK(plain.result == "quoted n-1");
    CHECK_FALSE(outside_trace.empty());
    CHECK(outside_trace == handle_trace);  // one delivery, one trace

    const TestRecord flaky{.value = R"({"id": "n-2", "flaky": true})"};
    Delivery first = kit->deliver(flaky);
    CHECK(first == Outcome::retry);
    CHECK(contains(first.reason, "the quote service timed out"));
    Delivery second = kit->deliver(flaky);
    CHECK(second == Outcome::applied);
    CHECK(second.result == "quoted n-2");

    Delivery refused = kit->deliver({.value = R"({"id": "n-3", "refused": true})"});
    CHECK(refused == Outcome::dead_lettered);
    CHECK(contains(refused.reason, "the quote service refused it"));
    CHECK(stored_outcome(*kit, "n-3") == "DEAD_LETTERED");

    CHECK(outside_calls == std::vector<std::string>{"n-1#1", "n-2#1", "n-2#2", "n-3#1"});
    CHECK_FALSE(outside_in_transaction);
    CHECK(count(*kit, "notes") == 2);
}

TEST_CASE(
    "the handler kit throws a before_transaction() DependencyError, or its own lost connection, "
    "from deliver() uncounted, as the daemon pauses on it") {
    bool down = true;
    auto kit = HandlerKit(exo::testing::postgres_uri(),
                          std::make_unique<FnOutsideHandler>(
                              [&](exo::OutsideContext& ctx) {
                                  if (!down) return;
                                  if (ctx.json().value("lost", false))
                                      throw pqxx::broken_connection("gone");
                                  throw exo::DependencyError("the quote service is down");
                              },
                              insert_note),
                          notes({.key = "json:/id"}));
    CHECK_THROWS_AS(kit.deliver({.value = R"({"id": "n-1"})"}), exo::DependencyError);
    CHECK_THROWS_WITH_AS(kit.deliver({.value = R"({"id": "n-2", "lost": true})"}),
                         doctest::Contains("the handler's own connection failed: gone"),
                         exo::DependencyError);
    down = false;
    Delivery later = kit.deliver({.value = R"({"id": "n-1"})"});
    CHECK(later == Outcome::applied);
    CHECK(later.attempt == 1);  // the outage counted no attempt
}

TEST_CASE(
    "the handler kit dead-letters a record whose before_transaction() finds its payload is not "
    "JSON, and retries one whose call throws something that is not a std::exception") {
    int handled = 0;
    auto kit = HandlerKit(exo::testing::postgres_uri(),
                          std::make_unique<FnOutsideHandler>(
                              [](exo::OutsideContext& ctx) {
                                  if (ctx.record().value == "odd") throw 7;
                                  (void)ctx.json();
                              },
                              [&](HandlerContext&) { ++handled; }),
                          {.key = "coordinates"});
    Delivery broken = kit.deliver({.value = "{not json"});
    CHECK(broken == Outcome::dead_lettered);
    CHECK(stored_outcome(kit, broken.key) == "DEAD_LETTERED");
    Delivery odd = kit.deliver({.value = "odd"});
    CHECK(odd == Outcome::retry);
    CHECK(contains(odd.reason, "not a std::exception"));
    CHECK(handled == 0);
}
