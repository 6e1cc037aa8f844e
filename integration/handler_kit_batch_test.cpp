// exo::testing::HandlerKit::deliver_batch (exo/testing.hpp) against the real
// PostgreSQL: a batch through the daemon's retry ladder, so a batch handler's
// handle_batch() runs over several records after the set-based start, and its
// failures take the daemon's rungs. Each kit works in a schema of its own.
#include <doctest/doctest.h>

#include <exo/batch_handler.hpp>
#include <exo/errors.hpp>
#include <exo/testing.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support.hpp"

using exo::BatchContext;
using exo::testing::HandlerKit;
using exo::testing::Outcome;

namespace {

// What each handle_batch() call saw: its records' ids and rerun() flags.
struct Call {
    std::vector<std::string> ids;
    std::vector<bool> reruns;
};

// A batch handler that writes one note per record and then does what `after` says.
class NotesBatch final : public exo::BatchHandler {
public:
    NotesBatch(std::vector<Call>& calls, std::function<void(BatchContext&)> after)
        : calls_(calls), after_(std::move(after)) {}
    void handle_batch(BatchContext& ctx) override {
        Call call;
        for (auto& record : ctx.records()) {
            const auto id = record.json().at("id").get<std::string>();
            call.ids.push_back(id);
            call.reruns.push_back(record.rerun());
            ctx.transaction().exec_params("INSERT INTO notes (id) VALUES ($1)", id);
            record.set_result("noted " + id);
        }
        calls_.push_back(std::move(call));
        after_(ctx);
    }

private:
    std::vector<Call>& calls_;
    std::function<void(BatchContext&)> after_;
};

// A kit for NotesBatch, keyed by the payload's "id".
HandlerKit notes_kit(std::vector<Call>& calls, std::function<void(BatchContext&)> after) {
    exo::testing::KitOptions options{
        .key = "json:/id",
        .migrations = {{"0100_notes.sql", "CREATE TABLE notes (id text PRIMARY KEY)"}}};
    return HandlerKit(exo::testing::postgres_uri(),
                      std::make_unique<NotesBatch>(calls, std::move(after)), options);
}

// Each delivery's outcome, in order.
std::vector<Outcome> outcomes(const std::vector<exo::testing::Delivery>& out) {
    std::vector<Outcome> all;
    for (const auto& d : out) all.push_back(d.outcome);
    return all;
}

// Three records, one per partition: a failed one holds back no other.
std::vector<exo::testing::TestRecord> three() {
    return {{.value = R"({"id": "a"})", .partition = 0},
            {.value = R"({"id": "bad"})", .partition = 1},
            {.value = R"({"id": "c"})", .partition = 2}};
}

long notes_count(HandlerKit& kit) {
    return kit.query_value<long>("SELECT count(*) FROM notes");
}

// The index of the record "bad" in ctx, if it is there.
std::optional<std::size_t> bad_in(BatchContext& ctx) {
    for (std::size_t i = 0; i < ctx.records().size(); ++i)
        if (ctx.records()[i].json().at("id") == "bad") return i;
    return std::nullopt;
}

}  // namespace

TEST_CASE(
    "the handler kit delivers a batch as the daemon runs one: one handle_batch() call over "
    "every record, after their dedup rows were written set-based, in one transaction") {
    std::vector<Call> calls;
    auto kit = notes_kit(calls, [](BatchContext&) {});
    const auto out = kit.deliver_batch(three());
    CHECK(outcomes(out) == std::vector{Outcome::applied, Outcome::applied, Outcome::applied});
    CHECK(out.at(1).result == "noted bad");
    REQUIRE(calls.size() == 1);  // the batch path runs only after the set-based start
    CHECK(calls[0].ids == std::vector<std::string>{"a", "bad", "c"});
    CHECK(calls[0].reruns == std::vector<bool>{false, false, false});
    CHECK(notes_count(kit) == 3);
    CHECK(kit.query_value<long>("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") ==
          3);
    // Delivered again, the batch is answered by its dedup rows: no call.
    for (const auto& d : kit.deliver_batch(three())) CHECK(d == Outcome::duplicate);
    CHECK(calls.size() == 1);
}

TEST_CASE(
    "in a handler kit batch, a record a batch handler names is retried alone, and the others "
    "apply in a second handle_batch() call that says rerun()") {
    std::vector<Call> calls;
    auto kit = notes_kit(calls, [](BatchContext& ctx) {
        if (auto i = bad_in(ctx)) ctx.fail(*i, exo::RetryableError("bad one"));
    });
    const auto out = kit.deliver_batch(three());
    CHECK(outcomes(out) == std::vector{Outcome::applied, Outcome::retry, Outcome::applied});
    CHECK(out.at(1).reason == "bad one");
    CHECK(out[2] == Outcome::applied);
    REQUIRE(calls.size() == 2);
    CHECK(calls[1].ids == std::vector<std::string>{"a", "c"});
    CHECK(calls[1].reruns == std::vector<bool>{true, true});
    CHECK(notes_count(kit) == 2);
    // Its next delivery is its next attempt.
    const auto again = kit.deliver_batch({three()[1]});
    CHECK(again[0] == Outcome::retry);
    CHECK(again[0].attempt == 2);
}

TEST_CASE(
    "in a handler kit batch, a batch handler failure that names no record runs each record "
    "alone through handle() in its savepoint, and only the bad one pays") {
    std::vector<Call> calls;
    auto kit = notes_kit(calls, [](BatchContext& ctx) {
        if (bad_in(ctx)) throw exo::PermanentError("poison");
    });
    const auto out = kit.deliver_batch(three());
    CHECK(outcomes(out) == std::vector{Outcome::applied, Outcome::dead_lettered, Outcome::applied});
    CHECK(out.at(1).reason == "poison");
    CHECK(out[2] == Outcome::applied);
    // The optimistic call of three, then the careful pass's batches of one.
    REQUIRE(calls.size() == 4);
    CHECK(calls[0].ids.size() == 3);
    for (std::size_t n = 1; n < calls.size(); ++n) CHECK(calls[n].ids.size() == 1);
    CHECK(notes_count(kit) == 2);
    CHECK(kit.query_value<std::string>(
              "SELECT outcome FROM exo_processed WHERE idempotency_key = 'bad'") ==
          "DEAD_LETTERED");
}
