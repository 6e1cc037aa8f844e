#pragma once
// Handlers for failure tests: the ledger, misbehaving on cue. The cue is the
// event id's prefix, so one workload can mix well-behaved and faulty records.
//   slow-*      sleeps `slow_for` before applying (a long handler, a held key)
//   flaky-*     throws RetryableError on attempts 1 and 2, succeeds on attempt 3
//   poison-*    throws PermanentError (a record that can never apply)
//   divzero-*   runs a failing statement through exec() (not exec_prepared): the
//               way most libpqxx code is written, and the way that used to make
//               libpqxx abort the whole batch transaction
//   swallow-*   applies, then runs a failing statement and swallows its error
//               (`catch (const pqxx::sql_error&) {}`): the transaction is aborted
//   badtext-*   throws PermanentError whose text is not valid UTF-8
//   deferred-*  applies, then writes a row that breaks a DEFERRABLE INITIALLY
//               DEFERRED foreign key: the batch's COMMIT fails, no statement does
//               (needs the tables of create_deferred_tables())
//   throwint-*  throws an int, not a std::exception
//   badresult-* applies and sets a result that is not valid UTF-8
//   gated-*     (UnpreparedLedger) see below
// Every call of handle() is counted in handle_calls; calls with ctx.rerun() in
// rerun_calls (per process: tests compare differences).
#include <atomic>
#include <chrono>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include <exo/batch_handler.hpp>
#include <exo/errors.hpp>
#include "ledger.hpp"

namespace exo::testing {

inline std::atomic<int> handle_calls{0};
inline std::atomic<int> rerun_calls{0};

// The tables deferred-* writes to, in the harness's schema (search_path).
inline void create_deferred_tables(const std::string& uri) {
    pqxx::connection c(uri);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE TABLE deferred_parents (id text PRIMARY KEY)");
    tx.exec(
        "CREATE TABLE deferred_children (id text PRIMARY KEY, parent text REFERENCES "
        "deferred_parents (id) DEFERRABLE INITIALLY DEFERRED)");
}

class MisbehavingLedger : public Handler {
public:
    explicit MisbehavingLedger(std::chrono::milliseconds slow_for) : slow_for_(slow_for) {}
    void prepare(pqxx::connection_base& c) override { ledger_.prepare(c); }
    void handle(HandlerContext& ctx) override {
        handle_calls++;
        if (ctx.rerun()) rerun_calls++;
        const auto& key = ctx.idempotency_key();
        auto cue = [&](const char* prefix) { return key.rfind(prefix, 0) == 0; };
        if (cue("slow-")) std::this_thread::sleep_for(slow_for_);
        if (cue("flaky-") && ctx.attempt() < 3)
            throw RetryableError("flaky: attempt " + std::to_string(ctx.attempt()));
        if (cue("poison-")) throw PermanentError("poison record refused");
        if (cue("badtext-")) throw PermanentError("refused: \xC0\x80 \xED\xA0\x80 \xFF end");
        if (cue("throwint-")) throw 42;
        if (cue("divzero-")) ctx.transaction().exec("SELECT 1 / 0");
        ledger_.handle(ctx);
        if (cue("swallow-")) {
            try {
                ctx.transaction().exec("SELECT 1 / 0");
            } catch (const pqxx::sql_error&) {
                // The common idiom this cue reproduces: "it failed, never mind".
            }
        }
        if (cue("deferred-"))
            ctx.transaction().exec_params("INSERT INTO deferred_children VALUES ($1, 'missing')",
                                          key);
        if (cue("badresult-")) ctx.set_result("\xFF\xFE result");
    }

private:
    handlers::LedgerRecordHandler ledger_;
    std::chrono::milliseconds slow_for_;
};

// MisbehavingLedger that first emits the payment (ctx.emit) to the record's
// topic + ".out", keyed by account, with the header "event" = the event id: so
// every cue above fails after an emit, which must then vanish with its run.
//   bademit-*  emits to a topic Kafka refuses ("bad topic"): PermanentError
class EmittingLedger final : public MisbehavingLedger {
public:
    using MisbehavingLedger::MisbehavingLedger;
    void handle(HandlerContext& ctx) override {
        const auto& key = ctx.idempotency_key();
        const auto& doc = ctx.json();
        const std::string topic =
            key.rfind("bademit-", 0) == 0 ? "bad topic" : ctx.record().topic.value + ".out";
        ctx.emit(topic, doc.at("accountId").get<std::string>(), ctx.record().value,
                 {{"event", key}});
        MisbehavingLedger::handle(ctx);
    }
};

// The ledger, whose prepare() fails until the table prepare_gate exists: a
// handler deployed before its migration.
class UnpreparedLedger final : public MisbehavingLedger {
public:
    using MisbehavingLedger::MisbehavingLedger;
    void prepare(pqxx::connection_base& c) override {
        pqxx::nontransaction(c).exec("SELECT 1 FROM prepare_gate LIMIT 1");
        MisbehavingLedger::prepare(c);
    }
};

// Like UnpreparedLedger, but its prepare() throws something that is not a
// std::exception (an int) until prepare_gate exists.
class ForeignThrowingPrepareLedger final : public MisbehavingLedger {
public:
    using MisbehavingLedger::MisbehavingLedger;
    void prepare(pqxx::connection_base& c) override {
        auto gate = pqxx::nontransaction(c).exec("SELECT to_regclass('prepare_gate') IS NOT NULL");
        if (!gate[0][0].as<bool>()) throw 42;
        MisbehavingLedger::prepare(c);
    }
};

// The batch ledger (handlers::LedgerHandler) misbehaving on cue, for
// handle_batch()'s failure paths. Cues as above, per record of the batch:
//   poison-*    names the record: ctx.fail(i, PermanentError)
//   flaky-*     names the record with a RetryableError on attempts 1 and 2
//   anon-*      throws a PermanentError naming no record (exo must find it)
//   result-*    applies and sets the result "r:<key>"
//   badindex-*  names a record outside the batch (a handler bug: names none)
//   swallow-*   after the ledger's statement, runs a failing statement and
//               swallows its error (the transaction is aborted)
// Every handle_batch() call is counted in batch_calls, the records it was
// given in batch_records, and records given with rerun(i) in batch_reruns;
// batches of one (a record run alone) also in batch_solo_calls.
inline std::atomic<int> batch_calls{0};
// The keys handle_batch() was given, in the order it saw them, across every
// instance (bindings): what the order tests compare.
inline std::mutex seen_mutex;
inline std::vector<std::string> seen;
inline void seen_keys_clear() {
    std::lock_guard lock(seen_mutex);
    seen.clear();
}
inline std::vector<std::string> seen_keys() {
    std::lock_guard lock(seen_mutex);
    return seen;
}
inline std::atomic<int> batch_records{0};
inline std::atomic<int> batch_reruns{0};
inline std::atomic<int> batch_solo_calls{0};

class CueBatchLedger final : public BatchHandler {
public:
    void prepare(pqxx::connection_base& c) override { ledger_.prepare(c); }
    void handle_batch(BatchContext& ctx) override {
        const auto records = ctx.records();
        batch_calls++;
        batch_records += static_cast<int>(records.size());
        if (records.size() == 1) batch_solo_calls++;
        {
            std::lock_guard lock(seen_mutex);
            for (const auto& r : records) seen.push_back(r.idempotency_key());
        }
        for (std::size_t i = 0; i < records.size(); ++i) {
            auto& r = records[i];
            if (r.rerun()) batch_reruns++;
            const auto& key = r.idempotency_key();
            auto cue = [&](const char* prefix) { return key.rfind(prefix, 0) == 0; };
            if (cue("poison-")) ctx.fail(i, PermanentError("poison record refused"));
            if (cue("flaky-") && r.attempt() < 3)
                ctx.fail(i, RetryableError("flaky: attempt " + std::to_string(r.attempt())));
            if (cue("anon-")) throw PermanentError("anonymous refusal");
            if (cue("result-")) r.set_result("r:" + key);
            if (cue("badindex-")) ctx.fail(records.size() + 7, PermanentError("bad index " + key));
        }
        ledger_.handle_batch(ctx);
        for (const auto& r : records)
            if (r.idempotency_key().rfind("swallow-", 0) == 0) {
                try {
                    ctx.transaction().exec("SELECT 1 / 0");
                } catch (const pqxx::sql_error&) {
                    // The habit this cue reproduces: "it failed, never mind".
                }
            }
    }

private:
    handlers::LedgerHandler ledger_;
};

}  // namespace exo::testing
