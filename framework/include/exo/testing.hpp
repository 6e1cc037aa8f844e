#pragma once
// A test kit for handlers: deliver records to a handler through exo's real
// per-record protocol against a real PostgreSQL, without Kafka or Redis, and
// get each record's outcome.
//
// Example: tests/header_examples/testing_example.cpp (a handler, its migration
// and three checks; compiled with the unit tests, run by the integration tests).
//
// What a delivery runs is the daemon's own code, in the order a worker runs it
// for a batch: the idempotency key from the binding (a record without one is
// dead-lettered with no dedup row; a later copy of a key in one batch ends as
// its first copy), the handler's before_transaction() if it has one
// (exo/outside_transaction.hpp; what it throws is rethrown where handle()
// would run), then the transaction step's retry ladder with its planner and
// executor, and the daemon's classification of every failure: PermanentError
// and PostgreSQL data exceptions dead-letter at once; anything else rolls back
// and is retried, up to max_attempts; a dead letter writes its DEAD_LETTERED
// dedup row with the reason.
// - deliver(): the record as a batch of one that runs alone: BEGIN, SAVEPOINT,
//   the dedup row and sequence step in one statement, handle() with a real
//   HandlerContext, the result, RELEASE SAVEPOINT, COMMIT (which notices a
//   swallowed database error).
// - deliver_batch(): the records as one batch in one transaction, as a worker
//   runs its batches: optimistic first (no savepoints; the dedup rows and
//   sequence steps of every record set-based, handle_batch() once per run of a
//   BatchHandler's records); again without a record a BatchRecordFailed
//   names; a savepoint per record after any other failure (ctx.rerun() true
//   for records run before); each record alone after a COMMIT that names no
//   record.
//
// What it leaves out, and how that shows:
// - Redis: duplicates are answered by the dedup row alone (as with
//   `on_redis_down: postgres_only`), and there is no CONFLICT.
// - Batches: deliver() makes each record a batch of its own, always with its
//   savepoint, so ctx.rerun() is false; only deliver_batch() batches records.
// - Kafka: nothing is consumed or produced. A dead letter is the DEAD_LETTERED
//   outcome and row; offsets are numbers the kit hands out per topic/partition.
// - Time: a RETRY or PARKED record is tried again when the test delivers it
//   again (no backoff); that delivery is its next attempt, at the same offset.
// - Outages: what the daemon answers by putting the batch back uncounted (a
//   lost PostgreSQL connection, a handler's DependencyError) is thrown from
//   deliver() as it was thrown; no attempt is counted.
//
// Lifecycle: the constructor connects, migrates and runs the handler's
// prepare(); deliveries run one after another on the kit's one connection.
// Thread-safety: none; one thread at a time, like a pqxx::connection.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pqxx/connection>
#include <pqxx/result>
#include <pqxx/transaction>

#include <exo/handler.hpp>
#include <exo/options.hpp>
#include <exo/record.hpp>

namespace exo::testing {

// What became of a delivered record: the daemon's outcomes, plus the two ways a
// record is not finished yet (RETRY, PARKED), where the daemon would try again.
enum class Outcome {
    applied,        // handle() ran and its transaction committed
    duplicate,      // the key's dedup row existed: handle() did not run
    stale,          // the sequence is not newer than the entity's last one: no effect
    dead_lettered,  // never applied; the reason is in Delivery::reason
    retry,          // failed and rolled back; deliver it again for the next attempt
    parked,         // strict sequence with a gap: rolled back, waiting for its predecessor
};
// "APPLIED", "DUPLICATE", "STALE", "DEAD_LETTERED", "RETRY", "PARKED".
const char* to_string(Outcome outcome);
std::ostream& operator<<(std::ostream& os, Outcome outcome);

// What a test delivers: a Kafka record without the broker. (Every member of
// these structs has an initializer, so designated initializers may leave any
// out under -Wextra.)
struct TestRecord {
    std::string value{};                  // the payload: JSON text (or anything, to test bad input)
    std::vector<RecordHeader> headers{};  // e.g. {{"event-id", "e-1"}} for a key "header:event-id"
    std::optional<std::string> key{};     // the Kafka message key (not the idempotency key)
    std::string topic = "test";
    int partition = 0;
    // nullopt: the next offset of the topic/partition; but a record delivered
    // again after RETRY or PARKED keeps its first delivery's offset. Give one to
    // model Kafka redelivering a record (a "coordinates" key is then the same).
    std::optional<std::int64_t> offset{};
    std::int64_t timestamp_ms = -1;  // -1: none, like a broker that gives none
};

// One delivery's outcome.
struct Delivery {
    Outcome outcome = Outcome::applied;
    // dead_lettered, retry, parked: why, as the daemon logs it and writes into the
    // dead letter (e.g. "gave up after 5 attempts: ..."). duplicate: the outcome
    // stored in the dedup row ("APPLIED", "STALE" or "DEAD_LETTERED"). Otherwise empty.
    std::string reason{};
    // applied: what the handler passed to ctx.set_result(); duplicate: the stored
    // result (for a dead-lettered key, its reason). Otherwise empty.
    std::string result{};
    std::string key{};  // the idempotency key as stored; empty if none could be derived
    int attempt = 1;    // the try this was: 1, then one more after each counted RETRY
    std::int64_t offset = 0;
};
// "APPLIED", "RETRY: <reason>", "DUPLICATE: APPLIED": for test failure messages.
std::ostream& operator<<(std::ostream& os, const Delivery& delivery);
// `CHECK(delivery == Outcome::applied)`: a failing check then prints the whole
// delivery, reason included (test frameworks print an enum as its number).
inline bool operator==(const Delivery& delivery, Outcome outcome) {
    return delivery.outcome == outcome;
}

// The binding the kit simulates (exo.yaml's `bindings[]` keys, same defaults)
// and the database it works in. Every field can be left at its default.
struct KitOptions {
    // bindings[].key: "coordinates", "header:NAME" or "json:/pointer" (RFC 6901).
    std::string key = "coordinates";
    // bindings[].sequence: JSON pointers to the entity id and the sequence
    // number; both or neither. strict: mode strict (next must be last + 1),
    // else latest. A strict gap older than gap_timeout is dead-lettered (0: at
    // its first sighting).
    std::optional<std::string> sequence_entity{};
    std::optional<std::string> sequence_value{};
    bool strict = false;
    std::chrono::milliseconds gap_timeout{60000};
    int max_attempts = 5;  // tries before a retryable failure is dead-lettered; at least 1
    std::string handler_name = "handler";  // the registered name: exo_sequences.handler, messages
    std::string group = "exo-test";        // the consumer group of the dedup rows

    // The application's migrations, applied after exo's own (like
    // Application::migration and migrations_dir): {name, sql} pairs and/or the
    // *.sql files of a directory. Names must be unique.
    std::vector<std::pair<std::string, std::string>> migrations{};
    std::string migrations_dir{};  // empty: none
    // true: the kit creates a schema of its own (see HandlerKit::schema()), works
    // only in it (search_path) and drops it when destroyed, so every kit starts
    // empty and kits may share a database, in parallel too. false: it works where
    // the URI points (e.g. ?options=-csearch_path%3Dmy_schema), and leaves it.
    bool fresh_schema = true;
};

// A binding's `options:` as exo.yaml would hand them to a handler's factory, for
// a handler under test: std::make_unique<H>(handler_options({{"currency", "EUR"}})).
// Errors read "kit options: options.<key>: ...".
HandlerOptions handler_options(const std::map<std::string, std::string>& values);

class HandlerKit {
public:
    // Connects to `postgres_uri` (a libpq URI or connection string; the daemon's
    // session settings apply), applies exo's migrations and the options', and
    // runs handler->prepare() on the kit's connection.
    // Throws UsageError for invalid options (all named at once) and for
    // migrations that cannot be applied safely (a duplicate name, a changed
    // applied one, an unreadable directory); std::runtime_error naming the
    // migration when one fails, or the handler when its prepare() fails; pqxx
    // exceptions when PostgreSQL cannot be reached.
    HandlerKit(const std::string& postgres_uri, std::unique_ptr<Handler> handler,
               const KitOptions& options = {});
    // Drops the kit's schema (fresh_schema), best effort; never throws.
    ~HandlerKit();
    // Movable (to keep one in a fixture); a moved-from kit may only be assigned
    // to or destroyed.
    HandlerKit(HandlerKit&&) noexcept;
    HandlerKit& operator=(HandlerKit&&) noexcept;

    // Runs one record through the protocol in a transaction of its own and
    // returns its outcome. The outcome is durable, as in the daemon: the effects
    // (applied), the dedup row (applied, stale, dead_lettered), or nothing
    // (retry, parked; a strict gap's first sighting is kept, as the daemon keeps
    // it). Throws pqxx exceptions for what the daemon does not blame on the
    // record: a lost connection or an unknown COMMIT outcome (the daemon waits
    // for PostgreSQL), and a DEAD_LETTERED row PostgreSQL refuses (the daemon
    // stalls the partition). The kit's connection may be unusable after one.
    Delivery deliver(const TestRecord& record);
    // One after another, each as deliver(record).
    std::vector<Delivery> deliver(const std::vector<TestRecord>& records);
    // The records as one batch in one transaction (see the file comment), each
    // record's outcome in their order; durable and throwing as deliver(). A
    // record RETRY or PARKED here is delivered again (by deliver() or
    // deliver_batch()) on its next attempt, as after deliver().
    std::vector<Delivery> deliver_batch(const std::vector<TestRecord>& records);

    // The kit's connection, to assert on (or set up) the handler's tables
    // between deliveries. Leave no transaction open on it across a deliver().
    pqxx::connection& connection();
    // The fresh schema's name (fresh_schema), else empty.
    const std::string& schema() const;

    // Runs one statement with $1... parameters in a transaction of its own on
    // connection() and commits. Throws pqxx exceptions.
    template <class... Args>
    pqxx::result query(const std::string& sql, Args&&... args) {
        pqxx::work tx(connection());
        pqxx::result rows = tx.exec_params(sql, std::forward<Args>(args)...);
        tx.commit();
        return rows;
    }
    // The first column of the first row as T; pqxx::range_error if there is none,
    // pqxx::conversion_error if it is NULL or not a T.
    template <class T, class... Args>
    T query_value(const std::string& sql, Args&&... args) {
        return query(sql, std::forward<Args>(args)...).at(0).at(0).template as<T>();
    }

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace exo::testing
