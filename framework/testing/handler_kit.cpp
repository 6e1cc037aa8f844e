// exo::testing::HandlerKit (exo/testing.hpp): one record at a time through the
// steps a worker runs for a record of its careful pass (pipeline/passes/: the
// key pass, run_record, FatePolicy::record_failed and record_contended, the
// dead-letter step),
// on the framework's own key derivation, statements and error classification.
// What the worker does per batch (claims, the optimistic run, producing dead
// letters, offsets) is left out; the file comment of exo/testing.hpp says how
// that shows.
#include <exo/testing.hpp>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <ostream>
#include <pqxx/pqxx>
#include <random>

#include <exo/errors.hpp>
#include <exo/outside_transaction.hpp>
#include "config/config.hpp"
#include "core/context_access.hpp"
#include "core/key_derivation.hpp"
#include "core/text.hpp"
#include "core/trace_context.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/framework_statements.hpp"
#include "pg/migrations.hpp"
#include "pg/pg_errors.hpp"
#include "pg/session.hpp"
#include "pipeline/failure_matrix.hpp"
#include "pipeline/outside_work.hpp"
#include "pipeline/record_connection.hpp"
#include "pipeline/record_step.hpp"

namespace exo::testing {
namespace {

// The worker's savepoint statements: each record runs inside one, so a failure
// rolls back the record alone.
constexpr const char* kSavepoint = "SAVEPOINT exo_record";
constexpr const char* kReleaseSavepoint = "RELEASE SAVEPOINT exo_record";

// The daemon's reasons (pipeline/passes/), so a test reads what an operator
// would read in the dead letter.

std::string not_a_std_exception(const std::string& handler) {
    return "handler '" + handler + "' threw an exception that is not a std::exception";
}

// What one delivery decided, before a dead letter is recorded.
struct Verdict {
    Outcome outcome = Outcome::applied;
    std::string reason;
    std::string result;
    bool record_key = true;   // dead_lettered: write the key's DEAD_LETTERED row
    bool clears_gap = false;  // dead_lettered for a gap timeout: forget its sighting
};

Verdict dead_letter(std::string why, bool record_key = true, bool clears_gap = false) {
    return {Outcome::dead_lettered, std::move(why), {}, record_key, clears_gap};
}

std::optional<std::string> pointer_problem(const std::string& pointer) {
    if (pointer.empty() || pointer.front() != '/')
        return "a JSON pointer (RFC 6901) starts with '/', got '" + pointer + "'";
    try {
        nlohmann::json::json_pointer parsed(pointer);
    } catch (const nlohmann::json::exception& e) {
        return "'" + pointer + "' is not a JSON pointer: " + e.what();
    }
    return std::nullopt;
}

// KitOptions as the BindingConfig the daemon would parse from exo.yaml. Every
// problem is reported at once, like the config's.
BindingConfig make_binding(const KitOptions& o) {
    std::vector<std::string> problems;
    BindingConfig b;
    b.handler = o.handler_name;
    b.max_attempts = o.max_attempts;

    const std::string header = "header:";
    const std::string json = "json:";
    if (o.key == "coordinates") {
        b.key = {KeySourceKind::coordinates, {}};
    } else if (o.key.rfind(header, 0) == 0 && o.key.size() > header.size()) {
        b.key = {KeySourceKind::header, o.key.substr(header.size())};
    } else if (o.key.rfind(json, 0) == 0) {
        b.key = {KeySourceKind::json, o.key.substr(json.size())};
        if (auto p = pointer_problem(b.key.name)) problems.push_back("key: " + *p);
    } else {
        problems.push_back(
            "key: expected \"coordinates\", \"header:NAME\" or \"json:/pointer\", got '" + o.key +
            "'");
    }

    if (o.sequence_entity.has_value() != o.sequence_value.has_value()) {
        problems.emplace_back("sequence_entity and sequence_value: give both or neither");
    } else if (o.sequence_entity) {
        if (auto p = pointer_problem(*o.sequence_entity))
            problems.push_back("sequence_entity: " + *p);
        if (auto p = pointer_problem(*o.sequence_value))
            problems.push_back("sequence_value: " + *p);
        b.sequence =
            SequenceConfig{*o.sequence_entity, *o.sequence_value,
                           o.strict ? SequenceMode::strict : SequenceMode::latest, o.gap_timeout};
    } else if (o.strict) {
        problems.emplace_back("strict: needs sequence_entity and sequence_value");
    }
    if (o.gap_timeout.count() < 0) problems.emplace_back("gap_timeout: must not be negative");
    if (o.max_attempts < 1) problems.emplace_back("max_attempts: must be at least 1");
    if (o.handler_name.empty()) problems.emplace_back("handler_name: must not be empty");
    if (o.group.empty() || o.group.size() > kMaxGroupIdBytes || !is_postgres_text(o.group))
        problems.push_back("group: must be 1 to " + std::to_string(kMaxGroupIdBytes) +
                           " bytes of text");
    if (!problems.empty()) {
        std::string what = "HandlerKit options:";
        for (const auto& p : problems) what += "\n  " + p;
        throw UsageError(what);
    }
    return b;
}

// exo_kit_<pid>_<n>_<random>: distinct across kits, processes and runs.
std::string fresh_schema_name() {
    static std::atomic<int> counter{0};
    std::random_device random;
    char suffix[9];
    std::snprintf(suffix, sizeof suffix, "%08x", random());
    return "exo_kit_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + suffix;
}

void run_sql(pqxx::connection& c, const std::string& sql) {
    pqxx::nontransaction tx(c);
    tx.exec(sql);
}

bool same_headers(const std::vector<RecordHeader>& a, const std::vector<RecordHeader>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].value != b[i].value) return false;
    return true;
}

}  // namespace

const char* to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::applied:
            return "APPLIED";
        case Outcome::duplicate:
            return "DUPLICATE";
        case Outcome::stale:
            return "STALE";
        case Outcome::dead_lettered:
            return "DEAD_LETTERED";
        case Outcome::retry:
            return "RETRY";
        case Outcome::parked:
            return "PARKED";
    }
    return "?";
}

std::ostream& operator<<(std::ostream& os, Outcome outcome) {
    return os << to_string(outcome);
}

std::ostream& operator<<(std::ostream& os, const Delivery& delivery) {
    os << delivery.outcome;
    if (!delivery.reason.empty()) os << ": " << delivery.reason;
    return os;
}

HandlerOptions handler_options(const std::map<std::string, std::string>& values) {
    std::map<std::string, HandlerOptions::Value> options;
    for (const auto& [key, text] : values) options.emplace(key, HandlerOptions::Value{text, 0});
    return HandlerOptions("kit options", "options", std::move(options));
}

struct HandlerKit::State {
    // A record that came back RETRY or PARKED: delivered again, it is the same
    // Kafka record (same offset) on its next try.
    struct Unfinished {
        TestRecord record;
        std::int64_t offset = 0;
        int attempts = 0;  // failed tries so far (PendingRecord::attempts)
    };

    PostgresConfig postgres;
    std::string schema;  // fresh_schema: created here, dropped by ~State
    BindingConfig binding;
    std::string group;
    std::unique_ptr<Handler> handler;
    std::shared_ptr<spdlog::logger> log;
    std::unique_ptr<pqxx::connection> connection;
    std::map<std::pair<std::string, int>, std::int64_t> next_offset;
    std::vector<Unfinished> unfinished;

    // Also when the constructor failed after creating the schema.
    ~State() {
        if (schema.empty()) return;
        try {
            if (!connection || !connection->is_open()) connection = open_postgres_session(postgres);
            run_sql(*connection,
                    "DROP SCHEMA IF EXISTS " + connection->quote_name(schema) + " CASCADE");
        } catch (...) {
            // Best effort: a leftover schema is named exo_kit_* and harmless.
        }
    }

    void use_schema(pqxx::connection& c) const {
        if (!schema.empty()) run_sql(c, "SET search_path TO " + c.quote_name(schema));
    }

    // `exo migrate`'s session: no statement or lock timeout, since a second
    // migrator (a kit in another test process) waits on the advisory lock.
    void migrate(const std::vector<Migration>& migrations) {
        PostgresConfig config = postgres;
        config.statement_timeout = std::chrono::milliseconds(0);
        config.lock_timeout = std::chrono::milliseconds(0);
        auto c = open_postgres_session(config);
        if (!schema.empty()) run_sql(*c, "CREATE SCHEMA " + c->quote_name(schema));
        use_schema(*c);
        apply_migrations(*c, migrations);
    }

    Delivery deliver(const TestRecord& in);
    Verdict run(const Record& record, JsonPayload& payload, const std::string& key, int& attempts);
    // The delivery's trace, and what the handler's before_transaction() handed
    // over or threw.
    struct Outside {
        TraceContext trace;
        std::any handed_over;
        std::exception_ptr failure;
    };
    Verdict run_record(pqxx::transaction_base& tx, const Record& record, JsonPayload& payload,
                       const std::string& key, int& attempts, const Outside& outside);
    Verdict failed(int& attempts, Failure failure, const std::string& why) const;
    std::optional<Verdict> record_dead_letter(const Verdict& verdict, const Record& record,
                                              const std::string& key);
};

Delivery HandlerKit::State::deliver(const TestRecord& in) {
    auto again = std::find_if(unfinished.begin(), unfinished.end(), [&](const Unfinished& u) {
        const auto& r = u.record;
        return r.topic == in.topic && r.partition == in.partition && r.key == in.key &&
               r.value == in.value && same_headers(r.headers, in.headers) &&
               (!in.offset || *in.offset == u.offset);
    });
    std::int64_t offset = 0;
    int attempts = 0;
    if (again != unfinished.end()) {
        offset = again->offset;
        attempts = again->attempts;
    } else {
        auto& next = next_offset[{in.topic, in.partition}];
        offset = in.offset.value_or(next);
        next = std::max(next, offset + 1);
    }
    const Record record{Topic{in.topic}, Partition{in.partition}, Offset{offset}, in.key, in.value,
                        in.headers,      in.timestamp_ms};
    JsonPayload payload(record.value);

    Delivery out;
    out.offset = offset;
    out.attempt = attempts + 1;
    Verdict verdict;
    try {
        out.key = derive_idempotency_key(binding.key, record, payload);
    } catch (const PermanentError& e) {
        // No storable key: nothing to record, as in the daemon (at least once).
        verdict = dead_letter(e.what(), /*record_key=*/false);
    }
    if (!out.key.empty()) verdict = run(record, payload, out.key, attempts);
    if (verdict.outcome == Outcome::dead_lettered)
        if (auto known = record_dead_letter(verdict, record, out.key)) verdict = *known;

    if (verdict.outcome == Outcome::retry || verdict.outcome == Outcome::parked) {
        if (again == unfinished.end())
            unfinished.push_back({in, offset, attempts});
        else
            again->attempts = attempts;
    } else if (again != unfinished.end()) {
        unfinished.erase(again);
    }
    out.outcome = verdict.outcome;
    out.reason = std::move(verdict.reason);
    out.result = std::move(verdict.result);
    return out;
}

// The record's transaction: BEGIN, its part, COMMIT (passes/transaction_pass.cpp: commit_records).
Verdict HandlerKit::State::run(const Record& record, JsonPayload& payload, const std::string& key,
                               int& attempts) {
    // Before BEGIN, as the worker's outside work (pipeline/outside_work.hpp).
    Outside outside{start_trace(record), {}, nullptr};
    if (const auto* work = dynamic_cast<const OutsideTransaction*>(handler.get())) {
        try {
            auto ctx = detail::ContextAccess::outside(record, key, payload, *log, attempts + 1,
                                                      &outside.trace, outside.handed_over);
            work->before_transaction(ctx);
        } catch (...) {
            outside.failure = outside_failure(std::current_exception());
        }
    }
    ExplicitTransaction batch(*connection);
    Verdict verdict = run_record(batch.statements(), record, payload, key, attempts, outside);
    try {
        batch.commit();
    } catch (const std::exception& e) {
        // The daemon retries the batch uncounted; a test should hear of it.
        if (classify(e) == Failure::postgres_down) throw;
        // A deferred constraint, or the server rolled back: nothing of it happened.
        verdict = failed(attempts, Failure::retryable, std::string("COMMIT failed: ") + e.what());
    }
    return verdict;
}

// passes/careful_pass.cpp: run_record in the careful pass, with its savepoint
// statements for a single record, on the worker's own record step.
Verdict HandlerKit::State::run_record(pqxx::transaction_base& tx, const Record& record,
                                      JsonPayload& payload, const std::string& key, int& attempts,
                                      const Outside& outside) {
    // Read before anything is written: a bad sequence field is the record's
    // fault alone and needs no rollback.
    std::optional<SequenceValue> seq;
    if (binding.sequence) {
        try {
            seq = extract_sequence(*binding.sequence, payload);
        } catch (const PermanentError& e) {
            return dead_letter(e.what());
        }
    }
    tx.exec(kSavepoint);
    bool handler_ran = false;  // one delivery is one batch: never a rerun
    try {
        RecordStepInput input{binding,         group,    record, key,          payload,    seq,
                              FencingToken{0}, *handler, *log,   attempts + 1, handler_ran};
        input.trace = &outside.trace;
        input.handed_over = &outside.handed_over;
        input.outside_failure = outside.failure;
        auto step = run_record_step(tx, input, GapUndo::rollback_to_savepoint);
        if (step.outcome == exo::Outcome::applied || step.outcome == exo::Outcome::stale) {
            // A handler that swallowed a database error left the transaction
            // aborted: this answers 25P02 (the worker's next SAVEPOINT, or the
            // RELEASE before COMMIT), handled below.
            tx.exec(kReleaseSavepoint);
            if (step.outcome == exo::Outcome::stale) return {Outcome::stale, {}, {}};
            return {Outcome::applied, {}, std::move(step.result)};
        }
        if (step.outcome == exo::Outcome::duplicate_postgres)
            return {Outcome::duplicate, to_sql(step.stored), std::move(step.result)};
        if (!step.gap_expired.empty())
            return dead_letter(std::move(step.gap_expired), /*record_key=*/false,
                               /*clears_gap=*/true);
        return {Outcome::parked, "waiting for an earlier sequence of " + seq->entity, {}};
    } catch (const std::exception& e) {
        const Failure failure = classify(e);
        if (pauses_the_worker(failure)) throw;
        const std::string why = failure == Failure::aborted_transaction
                                    ? swallowed_error_reason(binding.handler)
                                    : printable_text(e.what());
        tx.exec(kRollbackRecord);
        return failed(attempts, failure, why);
    } catch (...) {
        tx.exec(kRollbackRecord);
        return failed(attempts, Failure::retryable, not_a_std_exception(binding.handler));
    }
}

// passes/fate_policy.cpp: record_failed and record_contended, on the same failure matrix.
Verdict HandlerKit::State::failed(int& attempts, Failure failure, const std::string& why) const {
    if (counts_as_attempt(failure)) ++attempts;
    switch (decide_record_failure(failure, attempts, binding.max_attempts)) {
        case Action::dead_letter:
            return dead_letter(failure == Failure::permanent
                                   ? why
                                   : "gave up after " + std::to_string(attempts) +
                                         " attempts: " + why);
        case Action::nack:
            // Another transaction holds a row this record needs: the daemon NACKs
            // it like a Redis CONFLICT, without counting a try.
            return {Outcome::retry, "a row lock is held elsewhere: " + why, {}};
        case Action::retry:
        case Action::pause:
        case Action::stall:
            break;
    }
    return {Outcome::retry, why, {}};
}

// pipeline/dead_letter_publisher.cpp without the produce. Returns the verdict that
// replaces the dead letter when the key's row exists already.
std::optional<Verdict> HandlerKit::State::record_dead_letter(const Verdict& verdict,
                                                             const Record& record,
                                                             const std::string& key) {
    if (key.empty() || (!verdict.record_key && !verdict.clears_gap)) return std::nullopt;
    ExplicitTransaction batch(*connection);
    auto& tx = batch.statements();
    if (verdict.record_key) {
        auto existing = insert_processed(tx, {group,
                                              key,
                                              FencingToken{0},
                                              record.topic_partition(),
                                              record.offset,
                                              StoredOutcome::dead_lettered,
                                              printable_text(verdict.reason),
                                              {}});
        if (existing)
            return Verdict{Outcome::duplicate, to_sql(existing->outcome), existing->result};
    }
    if (verdict.clears_gap) clear_gap(tx, group, key);
    batch.commit();
    return std::nullopt;
}

HandlerKit::HandlerKit(const std::string& postgres_uri, std::unique_ptr<Handler> handler,
                       const KitOptions& options)
    : state_(std::make_unique<State>()) {
    auto& s = *state_;
    if (!handler) throw UsageError("HandlerKit: the handler is null");
    s.binding = make_binding(options);
    s.group = options.group;
    s.handler = std::move(handler);
    s.postgres.uri = postgres_uri;
    s.log = spdlog::default_logger()->clone(options.handler_name);

    std::vector<Migration> migrations;
    if (!options.migrations_dir.empty()) migrations = read_migrations_dir(options.migrations_dir);
    for (auto& [name, sql] : options.migrations) migrations.push_back({name, sql});
    if (options.fresh_schema) s.schema = fresh_schema_name();
    s.migrate(migrations);

    s.connection = open_postgres_session(s.postgres);
    s.use_schema(*s.connection);
    prepare_record_connection(*s.connection);
    try {
        s.handler->prepare(*s.connection);
    } catch (const std::exception& e) {
        if (classify(e) == Failure::postgres_down) throw;
        throw std::runtime_error("handler '" + options.handler_name + "' failed in prepare(): " +
                                 e.what() + "; fix its statements or give the kit its migrations");
    }
}

HandlerKit::~HandlerKit() = default;
HandlerKit::HandlerKit(HandlerKit&&) noexcept = default;
HandlerKit& HandlerKit::operator=(HandlerKit&&) noexcept = default;

Delivery HandlerKit::deliver(const TestRecord& record) {
    return state_->deliver(record);
}

std::vector<Delivery> HandlerKit::deliver(const std::vector<TestRecord>& records) {
    std::vector<Delivery> out;
    out.reserve(records.size());
    for (const auto& r : records) out.push_back(state_->deliver(r));
    return out;
}

pqxx::connection& HandlerKit::connection() {
    return *state_->connection;
}

const std::string& HandlerKit::schema() const {
    return state_->schema;
}

}  // namespace exo::testing
