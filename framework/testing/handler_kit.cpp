// exo::testing::HandlerKit (exo/testing.hpp): records in a batch through the
// steps a worker runs for a batch's transaction, on the pipeline's own code:
// the key step, the outside work, the transaction step's retry ladder (its
// planner and executor, protocol/passes/retry_ladder.hpp and
// attempt_executor.hpp), the fate policy, the settling of repeated keys and the
// dead-letter step's dedup row. What the worker does around that (claims,
// producing dead letters, offsets) is left out; the file comment of
// exo/testing.hpp says how that shows.
#include <exo/testing.hpp>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <list>
#include <map>
#include <ostream>
#include <pqxx/pqxx>
#include <random>

#include <exo/errors.hpp>
#include "config/config.hpp"
#include "core/text.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/framework_statements.hpp"
#include "pg/migrations.hpp"
#include "pg/session.hpp"
#include "protocol/binding_handlers.hpp"
#include "protocol/failure_matrix.hpp"
#include "protocol/fate_policy.hpp"
#include "protocol/handler_registry.hpp"
#include "protocol/steps/keys.hpp"
#include "protocol/steps/repeated_keys.hpp"
#include "protocol/steps/transaction_step.hpp"
#include "runtime/outside_work.hpp"
#include "runtime/sessions/record_connection.hpp"

namespace exo::testing {
namespace {

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
    // The kit's records carry no fingerprint: a copy of a key is its duplicate,
    // whatever its payload.
    b.on_key_reuse = KeyReusePolicy::ignore;
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
    // The daemon's view of the kit's one binding: config.bindings.front().
    Config config;
    std::shared_ptr<spdlog::logger> log;
    std::unique_ptr<pqxx::connection> connection;
    PipelineStats stats;
    std::unique_ptr<FatePolicy> fate;
    std::unique_ptr<BindingHandlers> handlers;
    std::unique_ptr<OutsideWork> outside;
    std::map<std::pair<std::string, int>, std::int64_t> next_offset;
    std::list<Unfinished> unfinished;

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

    const BindingConfig& binding() const { return config.bindings.front(); }
    std::vector<Delivery> deliver(const std::vector<TestRecord>& records, bool alone);
    Delivery delivery_of(BatchRecord& record);
    void record_dead_letter(const BatchRecord& record, Delivery& out);
};

std::vector<Delivery> HandlerKit::State::deliver(const std::vector<TestRecord>& in, bool alone) {
    // Where each record comes from: a record delivered again after RETRY or
    // PARKED is the unfinished one, at its offset, on its next attempt.
    std::vector<std::list<Unfinished>::iterator> again;
    std::vector<PendingRecord> taken;
    std::vector<int> tries;  // failed tries before this delivery, per record
    for (const auto& r : in) {
        // A record is an unfinished one at most once per batch.
        auto found = unfinished.begin();
        for (; found != unfinished.end(); ++found) {
            const auto& was = found->record;
            if (was.topic == r.topic && was.partition == r.partition && was.key == r.key &&
                was.value == r.value && same_headers(was.headers, r.headers) &&
                (!r.offset || *r.offset == found->offset) &&
                std::find(again.begin(), again.end(), found) == again.end())
                break;
        }
        std::int64_t offset = 0;
        int attempts = 0;
        if (found != unfinished.end()) {
            offset = found->offset;
            attempts = found->attempts;
        } else {
            auto& next = next_offset[{r.topic, r.partition}];
            offset = r.offset.value_or(next);
            next = std::max(next, offset + 1);
        }
        again.push_back(found);
        PendingRecord pending{.record =
                                  Record{Topic{r.topic}, Partition{r.partition}, Offset{offset},
                                         r.key, r.value, r.headers, r.timestamp_ms}};
        pending.attempts = attempts;
        tries.push_back(attempts);
        pending.solo = alone;  // a record delivered alone runs as one alone: careful at once
        taken.push_back(std::move(pending));
    }

    Batch batch(std::move(taken));
    key_step(batch, binding());
    outside->run(batch, *handlers);
    const PassContext ctx{config.kafka.group_id,
                          config.outbox.emit_limits,
                          config.pipeline.framework_sql,
                          *handlers,
                          stats,
                          *log,
                          *fate};
    run_transactions(ctx, batch, [this]() -> pqxx::connection& { return *connection; });
    settle_repeated_keys(batch);

    std::vector<Delivery> out;
    std::size_t n = 0;
    for (auto& record : batch) {
        auto delivery = delivery_of(record);
        delivery.attempt = tries[n] + 1;  // the try this was
        const auto& r = in[n];
        auto& was = again[n++];
        if (delivery.outcome == Outcome::retry || delivery.outcome == Outcome::parked) {
            if (was == unfinished.end())
                unfinished.push_back({r, delivery.offset, record.pending.attempts});
            else
                was->attempts = record.pending.attempts;
        } else if (was != unfinished.end()) {
            unfinished.erase(was);
        }
        out.push_back(std::move(delivery));
    }
    return out;
}

// The record's fate as the kit reports it; a dead letter's dedup row written.
Delivery HandlerKit::State::delivery_of(BatchRecord& record) {
    Delivery out;
    out.key = record.key;
    out.offset = record.pending.record.offset.value;
    if (const auto* finished = std::get_if<fate::Finished>(&record.fate())) {
        switch (finished->outcome) {
            case exo::Outcome::applied:
                out.outcome = Outcome::applied;
                out.result = record.result();
                break;
            case exo::Outcome::stale:
                out.outcome = Outcome::stale;
                break;
            case exo::Outcome::duplicate_redis:
            case exo::Outcome::duplicate_postgres:
            case exo::Outcome::duplicate_in_batch:
            case exo::Outcome::dead_lettered:
                out.outcome = Outcome::duplicate;
                out.reason = to_sql(record.stored());
                out.result = record.result();
                break;
        }
    } else if (const auto* parked = std::get_if<fate::Park>(&record.fate())) {
        out.outcome = Outcome::parked;
        out.reason = parked->why;
    } else if (record.is_dead_letter()) {
        out.outcome = Outcome::dead_lettered;
        out.reason = record.verdict()->reason;
        record_dead_letter(record, out);
    } else {
        // Requeued: retried, NACKed, or held behind a record of its lane.
        out.outcome = Outcome::retry;
        out.reason = std::string(record.why());
    }
    return out;
}

// protocol/dead_letter_publisher.cpp without the produce. When the key's row
// exists already, `out` becomes the duplicate it answers.
void HandlerKit::State::record_dead_letter(const BatchRecord& record, Delivery& out) {
    const auto& verdict = *record.verdict();
    if (record.key.empty() || (!verdict.record_key && !verdict.clears_gap)) return;
    const auto& r = record.pending.record;
    ExplicitTransaction batch(*connection);
    auto& tx = batch.statements();
    if (verdict.record_key) {
        auto existing = insert_processed(tx, {config.kafka.group_id,
                                              record.key,
                                              FencingToken{0},
                                              r.topic_partition(),
                                              r.offset,
                                              StoredOutcome::dead_lettered,
                                              printable_text(verdict.reason),
                                              {}});
        if (existing) {
            out = {Outcome::duplicate, to_sql(existing->outcome),
                   existing->result,   out.key,
                   out.attempt,        out.offset};
            return;
        }
    }
    if (verdict.clears_gap) clear_gap(tx, config.kafka.group_id, record.key);
    batch.commit();
}

HandlerKit::HandlerKit(const std::string& postgres_uri, std::unique_ptr<Handler> handler,
                       const KitOptions& options)
    : state_(std::make_unique<State>()) {
    auto& s = *state_;
    if (!handler) throw UsageError("HandlerKit: the handler is null");
    s.config.kafka.group_id = options.group;
    s.config.bindings.push_back(make_binding(options));
    s.postgres.uri = postgres_uri;
    s.log = spdlog::default_logger()->clone(options.handler_name);
    s.fate = std::make_unique<FatePolicy>(s.config.pipeline, s.stats, *s.log);
    // The worker's handler instances, holding the one under test.
    HandlerRegistry registry;
    auto given = std::make_shared<std::unique_ptr<Handler>>(std::move(handler));
    registry.add(options.handler_name,
                 [given](const HandlerOptions&) { return std::move(*given); });
    s.handlers = std::make_unique<BindingHandlers>(s.config.bindings, registry);
    s.outside = std::make_unique<OutsideWork>(0, s.stats, *s.log);

    std::vector<Migration> migrations;
    if (!options.migrations_dir.empty()) migrations = read_migrations_dir(options.migrations_dir);
    for (auto& [name, sql] : options.migrations) migrations.push_back({name, sql});
    if (options.fresh_schema) s.schema = fresh_schema_name();
    s.migrate(migrations);

    s.connection = open_postgres_session(s.postgres);
    s.use_schema(*s.connection);
    prepare_record_connection(*s.connection);
    try {
        s.handlers->handler(s.binding()).prepare(*s.connection);
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
    return state_->deliver({record}, /*alone=*/true).front();
}

std::vector<Delivery> HandlerKit::deliver(const std::vector<TestRecord>& records) {
    std::vector<Delivery> out;
    out.reserve(records.size());
    for (const auto& r : records) out.push_back(deliver(r));
    return out;
}

std::vector<Delivery> HandlerKit::deliver_batch(const std::vector<TestRecord>& records) {
    if (records.empty()) return {};
    return state_->deliver(records, /*alone=*/false);
}

pqxx::connection& HandlerKit::connection() {
    return *state_->connection;
}

const std::string& HandlerKit::schema() const {
    return state_->schema;
}

}  // namespace exo::testing
