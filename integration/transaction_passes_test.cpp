// The optimistic and the careful pass of the transaction step (
// docs/design.md#transaction), driven directly against a real PostgreSQL and nothing else: no
// Redis (records carry no claim token), no Kafka (records are made here), no
// worker thread. What the passes decide is read off each record's fate and off
// the dedup rows.
#include <doctest/doctest.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "outbox/outbox_doorbell.hpp"
#include "pg/migrations.hpp"
#include "protocol/batch.hpp"
#include "protocol/binding_handlers.hpp"
#include "protocol/fate_policy.hpp"
#include "protocol/handler_registry.hpp"
#include "protocol/passes/careful_pass.hpp"
#include "protocol/passes/optimistic_pass.hpp"
#include "protocol/steps/keys.hpp"
#include "runtime/sessions/record_connection.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;

namespace {

// A schema of its own with every migration applied, one binding (strict
// sequences by account, keys from /eventId), the worker's handler instances and
// fate policy, and one prepared connection: what the passes need, no more.
class PassBench {
public:
    explicit PassBench(const std::string& handler) {
        auto id = exo::testing::unique_name("passes");
        for (auto& c : id)
            if (c == '-') c = '_';
        const std::string schema = "t_" + id;
        {
            pqxx::connection c(exo::testing::postgres_uri());
            pqxx::nontransaction(c).exec("CREATE SCHEMA " + schema);
        }
        const auto base = exo::testing::postgres_uri();
        uri_ = base + (base.find('?') == std::string::npos ? "?" : "&") +
               "options=-csearch_path%3D" + schema;
        connection_ = std::make_unique<pqxx::connection>(uri_);
        exo::apply_migrations(*connection_, exo::testing::ledger_migrations());

        config_.kafka.group_id = "group_" + id;
        config_.pipeline.retry_backoff_initial = 20ms;
        config_.pipeline.retry_backoff_max = 500ms;
        exo::BindingConfig b;
        b.topic = "payments";
        b.handler = handler;
        b.key = {exo::KeySourceKind::json, "/eventId"};
        b.sequence =
            exo::SequenceConfig{"/accountId", "/sequenceId", exo::SequenceMode::strict, 20000ms};
        b.max_attempts = 3;
        b.dead_letter_topic = "payments.dlq";
        config_.bindings.push_back(b);
        registry_.add("misbehaving_ledger", [](const exo::HandlerOptions&) {
            return std::make_unique<exo::testing::MisbehavingLedger>(0ms);
        });
        registry_.add("emitting_ledger", [](const exo::HandlerOptions&) {
            return std::make_unique<exo::testing::EmittingLedger>(0ms);
        });
        registry_.add("cue_batch_ledger", [](const exo::HandlerOptions&) {
            return std::make_unique<exo::testing::CueBatchLedger>();
        });
        handlers_ = std::make_unique<exo::BindingHandlers>(config_.bindings, registry_);
        // As the worker's PostgresSession prepares its connection.
        exo::prepare_record_connection(*connection_);
        handlers_->prepare(*connection_);
        log_ = spdlog::default_logger()->clone("passes-test");
        fate_ = std::make_unique<exo::FatePolicy>(config_.pipeline, stats_, *log_);
    }

    // A batch of payments (event id, account, sequence), keys derived. `lanes`:
    // each payment's ordering key (as the daemon sets it under ordering: key);
    // none: all in one lane, as under ordering: partition.
    std::unique_ptr<exo::Batch> batch(
        const std::vector<std::tuple<std::string, std::string, int>>& payments,
        const std::vector<std::string>& lanes = {}) {
        std::vector<exo::PendingRecord> taken;
        for (const auto& [event, account, sequence] : payments) {
            exo::PendingRecord p;
            if (!lanes.empty()) p.ordering_key = lanes.at(taken.size());
            p.record.topic = exo::Topic{"payments"};
            p.record.partition = exo::Partition{0};
            p.record.offset = exo::Offset{next_offset_++};
            p.record.value =
                "{\"eventId\":\"" + event + "\",\"accountId\":\"" + account +
                "\",\"type\":\"CREDIT\",\"amount\":1,\"sequenceId\":" + std::to_string(sequence) +
                "}";
            taken.push_back(std::move(p));
        }
        auto out = std::make_unique<exo::Batch>(std::move(taken));
        exo::key_step(*out, config_.bindings, 0ms);
        return out;
    }

    static exo::TransactionRecords records_of(exo::Batch& batch) {
        exo::TransactionRecords records;
        for (auto& record : batch) {
            REQUIRE(record.is_pending());
            record.in_transaction = true;
            records.push_back(&record);
        }
        return records;
    }

    // Applies the payments in one careful pass: each of them, or the test case stops
    // here, naming the record and why (the pass commits without a failed record).
    void apply(const std::vector<std::tuple<std::string, std::string, int>>& payments) {
        auto done = batch(payments);
        REQUIRE(exo::run_careful_pass(context(), *connection_, *done, records_of(*done)).committed);
        for (const auto& record : *done)
            REQUIRE_MESSAGE(record.outcome() == exo::Outcome::applied,
                            record.key << " was not applied: " << record.why());
    }

    exo::PassContext context() {
        return {config_.kafka.group_id,
                config_.outbox.emit_limits,
                config_.pipeline.framework_sql,
                *handlers_,
                stats_,
                *log_,
                *fate_};
    }
    const exo::PipelineStats& stats() const { return stats_; }
    const std::string& uri() const { return uri_; }
    pqxx::connection& connection() { return *connection_; }

    // exo_processed: key -> outcome.
    std::map<std::string, std::string> processed() {
        std::map<std::string, std::string> rows;
        for (const auto& row : pqxx::nontransaction(*connection_)
                                   .exec("SELECT idempotency_key, outcome FROM exo_processed"))
            rows[row[0].as<std::string>()] = row[1].as<std::string>();
        return rows;
    }
    std::int64_t count(const std::string& sql) {
        pqxx::nontransaction tx(*connection_);
        return exo::testing::single_number(tx, sql);
    }

private:
    std::string uri_;
    std::unique_ptr<pqxx::connection> connection_;
    exo::Config config_;
    exo::HandlerRegistry registry_;
    std::unique_ptr<exo::BindingHandlers> handlers_;
    exo::PipelineStats stats_;
    std::shared_ptr<spdlog::logger> log_;
    std::unique_ptr<exo::FatePolicy> fate_;
    std::int64_t next_offset_ = 0;
};

enum class Pass { optimistic, careful };

// Runs `records` of `batch` through one pass; whether it committed.
bool committed_by(PassBench& bench, Pass pass, exo::Batch& batch,
                  const exo::TransactionRecords& records) {
    if (pass == Pass::optimistic)
        return exo::run_optimistic_pass(bench.context(), bench.connection(), batch, records)
            .committed;
    return exo::run_careful_pass(bench.context(), bench.connection(), batch, records).committed;
}

// ok-1, poison-2, ok-3: the handlers fail poison-* records (PermanentError).
std::unique_ptr<exo::Batch> poison_between_two(PassBench& bench) {
    return bench.batch({{"ok-1", "acc-a", 1}, {"poison-2", "acc-b", 1}, {"ok-3", "acc-c", 1}});
}

exo::BatchRecord& record_of(exo::Batch& batch, const std::string& key) {
    for (auto& record : batch)
        if (record.key == key) return record;
    throw std::runtime_error("no record with key " + key);
}

}  // namespace

TEST_CASE(
    "against PostgreSQL alone, a failing record rolls the optimistic pass back whole, and the "
    "careful pass then fails only that record") {
    PassBench bench("misbehaving_ledger");
    auto batch = poison_between_two(bench);
    const auto records = PassBench::records_of(*batch);

    const auto optimistic =
        exo::run_optimistic_pass(bench.context(), bench.connection(), *batch, records);
    CHECK_FALSE(optimistic.committed);
    CHECK(optimistic.why.find("poison record refused") != std::string::npos);
    CHECK_FALSE(optimistic.named);     // a per-record handler names no record
    CHECK(bench.processed().empty());  // nothing of it stayed

    // What the transaction step does before it goes careful: forget the verdicts.
    for (auto* record : records) record->reset_to_pending();
    const auto careful =
        exo::run_careful_pass(bench.context(), bench.connection(), *batch, records);
    CHECK(careful.committed);
    CHECK(record_of(*batch, "ok-1").outcome() == exo::Outcome::applied);
    CHECK(record_of(*batch, "ok-3").outcome() == exo::Outcome::applied);
    const auto& poison = record_of(*batch, "poison-2");
    CHECK(poison.is_dead_letter());
    CHECK(poison.why() == "poison record refused");
    CHECK(poison.committed());
    // Only the poison record's savepoint rolled back: its dedup row is left to
    // the dead-letter step.
    CHECK(bench.processed() ==
          std::map<std::string, std::string>{{"ok-1", "APPLIED"}, {"ok-3", "APPLIED"}});
}

TEST_CASE(
    "against PostgreSQL alone, a key whose dedup row exists is a duplicate in either pass, and "
    "its handler does not run") {
    PassBench bench("misbehaving_ledger");
    bench.apply({{"dup-1", "acc-a", 1}});
    const int calls_before = exo::testing::handle_calls;
    auto batch = bench.batch({{"dup-1", "acc-a", 1}, {"new-2", "acc-b", 1}});
    const auto records = PassBench::records_of(*batch);
    Pass pass = Pass::optimistic;  // set-based
    SUBCASE("optimistic") {}
    SUBCASE("careful") {
        pass = Pass::careful;
    }
    CHECK(committed_by(bench, pass, *batch, records));
    const auto& dup = record_of(*batch, "dup-1");
    CHECK(dup.is_finished());
    CHECK(dup.outcome() == exo::Outcome::duplicate_postgres);
    CHECK_FALSE(dup.handler_ran);
    CHECK(record_of(*batch, "new-2").outcome() == exo::Outcome::applied);
    CHECK(exo::testing::handle_calls - calls_before == 1);  // new-2's alone
    CHECK(bench.processed() ==
          std::map<std::string, std::string>{{"dup-1", "APPLIED"}, {"new-2", "APPLIED"}});
}

TEST_CASE(
    "against PostgreSQL alone, a strict-sequence gap parks in either pass, keeps no dedup row and "
    "records its first sighting") {
    PassBench bench("misbehaving_ledger");
    // acc-g's sequence 2 never came: 3 is a gap; acc-h's 1 applies beside it.
    auto batch = bench.batch({{"gap-3", "acc-g", 3}, {"ok-1", "acc-h", 1}});
    bench.apply({{"seq-1", "acc-g", 1}});
    const auto records = PassBench::records_of(*batch);
    Pass pass = Pass::optimistic;  // set-based
    SUBCASE("optimistic") {}
    SUBCASE("careful") {
        pass = Pass::careful;
    }
    CHECK(committed_by(bench, pass, *batch, records));
    const auto& gap = record_of(*batch, "gap-3");
    CHECK(std::holds_alternative<exo::fate::Park>(gap.fate()));
    CHECK(gap.why() == "waiting for an earlier sequence of acc-g");
    CHECK(std::get<exo::fate::Park>(gap.fate()).delay <= 1000ms);
    CHECK_FALSE(gap.verdict());
    CHECK(record_of(*batch, "ok-1").outcome() == exo::Outcome::applied);
    CHECK(bench.processed() ==
          std::map<std::string, std::string>{{"seq-1", "APPLIED"}, {"ok-1", "APPLIED"}});
    CHECK(bench.count("SELECT count(*) FROM exo_sequence_gaps WHERE idempotency_key = 'gap-3'") ==
          1);
    CHECK(bench.count("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-g'") == 1);
}

TEST_CASE(
    "against PostgreSQL alone, a batch handler that names its failing record ends the "
    "optimistic pass with that record named, and nothing of the pass stays") {
    PassBench bench("cue_batch_ledger");
    auto batch = poison_between_two(bench);
    const auto records = PassBench::records_of(*batch);
    const auto pass =
        exo::run_optimistic_pass(bench.context(), bench.connection(), *batch, records);
    CHECK_FALSE(pass.committed);
    REQUIRE(pass.named);
    CHECK(pass.named->record == &record_of(*batch, "poison-2"));
    CHECK(pass.named->failure == exo::Failure::permanent);
    CHECK(bench.processed().empty());
}

TEST_CASE(
    "an optimistic pass writes its per-record handler's emits in one statement at COMMIT and "
    "rings the relay's doorbell; the careful pass leaves out a record rolled back to its "
    "savepoint") {
    PassBench bench("emitting_ledger");
    // Counts the statements that insert into exo_outbox.
    pqxx::nontransaction(bench.connection())
        .exec(
            "CREATE TABLE outbox_statements (n int);"
            " CREATE FUNCTION outbox_statement() RETURNS trigger LANGUAGE plpgsql AS"
            " $$BEGIN INSERT INTO outbox_statements VALUES (1); RETURN NULL; END$$;"
            " CREATE TRIGGER outbox_statement AFTER INSERT ON exo_outbox"
            " FOR EACH STATEMENT EXECUTE FUNCTION outbox_statement()");
    exo::OutboxDoorbell doorbell;
    const auto rung = [&] {
        pollfd fd{doorbell.fd(), POLLIN, 0};
        const bool was = ::poll(&fd, 1, 0) == 1;
        doorbell.clear();
        return was;
    };
    auto context = bench.context();
    context.outbox_doorbell = &doorbell;

    auto batch = bench.batch(
        {{"ok-1", "acc-a", 1}, {"ok-2", "acc-b", 1}, {"ok-3", "acc-a", 2}, {"ok-4", "acc-c", 1}});
    CHECK(
        exo::run_optimistic_pass(context, bench.connection(), *batch, PassBench::records_of(*batch))
            .committed);
    // Each record emits twice (its own topic, and the ledger's ledger.applied).
    CHECK(bench.count("SELECT count(*) FROM exo_outbox") == 8);
    CHECK(bench.count("SELECT count(*) FROM outbox_statements") == 1);
    CHECK(rung());

    // poison-6 emits, then fails: its savepoint takes its row along.
    auto careful = bench.batch({{"ok-5", "acc-d", 1}, {"poison-6", "acc-e", 1}});
    CHECK(exo::run_careful_pass(context, bench.connection(), *careful,
                                PassBench::records_of(*careful))
              .committed);
    CHECK(bench.count("SELECT count(*) FROM exo_outbox") == 10);
    CHECK(bench.count("SELECT count(*) FROM exo_outbox WHERE convert_from(value, 'UTF8') LIKE "
                      "'%poison-6%'") == 0);
    CHECK(rung());

    // A transaction that emitted nothing (duplicates: no handler runs) does not
    // wake the relay.
    auto again = bench.batch({{"ok-1", "acc-a", 1}, {"ok-2", "acc-b", 1}});
    CHECK(
        exo::run_optimistic_pass(context, bench.connection(), *again, PassBench::records_of(*again))
            .committed);
    CHECK_FALSE(rung());
}

TEST_CASE(
    "against PostgreSQL alone, a record whose entity another transaction holds locked is put back "
    "at once by either pass, with the later records of its lane, and the rest of the "
    "transaction commits") {
    PassBench bench("misbehaving_ledger");
    bench.apply({{"e-1", "acc-e", 1}});
    // What exo's sessions set (pg/session.hpp): today's lock wait ends in 55P03.
    pqxx::nontransaction(bench.connection()).exec("SET lock_timeout = '5s'");
    // Another session holds acc-e's sequence row, as another slot's open transaction would.
    pqxx::connection holder_connection(bench.uri());
    pqxx::work holder(holder_connection);
    holder.exec("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-e' FOR UPDATE");

    // Lane "e": e-2 (acc-e, held), then x-1 of a free entity and e-3; lanes "a"
    // and "b" have nothing held.
    auto batch = bench.batch({{"e-2", "acc-e", 2},
                              {"ok-1", "acc-a", 1},
                              {"x-1", "acc-x", 1},
                              {"e-3", "acc-e", 3},
                              {"ok-2", "acc-b", 1}},
                             {"e", "a", "e", "e", "b"});
    const auto records = PassBench::records_of(*batch);
    const auto conflicts_before = bench.stats().conflicts.load();
    SUBCASE("optimistic (set-based)") {
        const auto pass =
            exo::run_optimistic_pass(bench.context(), bench.connection(), *batch, records);
        CHECK(pass.committed);
        // Put back uncounted; the transaction step NACKs the held record once.
        REQUIRE(pass.entity_held.size() == 1);
        CHECK(pass.entity_held.front().record == &record_of(*batch, "e-2"));
        CHECK(pass.entity_held.front().failure == exo::Failure::contention);
        CHECK(pass.entity_held.front().why.find("'acc-e'") != std::string::npos);
        CHECK(bench.stats().conflicts.load() == conflicts_before);
    }
    SUBCASE("careful") {
        CHECK(
            exo::run_careful_pass(bench.context(), bench.connection(), *batch, records).committed);
        const auto& held = record_of(*batch, "e-2");
        CHECK(held.pending.nacks == 1);  // NACKed: another transaction holds its entity
        CHECK(held.pending.attempts == 0);
        CHECK(held.why().find("is locked by another transaction") != std::string::npos);
        CHECK(bench.stats().conflicts.load() == conflicts_before + 1);
    }
    for (const auto* key : {"e-2", "x-1", "e-3"}) {
        CAPTURE(key);
        CHECK(std::holds_alternative<exo::fate::Requeue>(record_of(*batch, key).fate()));
        CHECK_FALSE(record_of(*batch, key).handler_ran);
    }
    CHECK(record_of(*batch, "ok-1").outcome() == exo::Outcome::applied);
    CHECK(record_of(*batch, "ok-2").outcome() == exo::Outcome::applied);
    // Nothing of the records put back stayed: x-1's dedup row, written before
    // the lane was known to be held, is gone again, and acc-x was not created.
    CHECK(bench.processed() == std::map<std::string, std::string>{
                                   {"e-1", "APPLIED"}, {"ok-1", "APPLIED"}, {"ok-2", "APPLIED"}});
    CHECK(bench.count("SELECT count(*) FROM exo_sequences WHERE entity = 'acc-x'") == 0);
    holder.abort();
    CHECK(bench.count("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-e'") == 1);
}
