#pragma once
// A handler with work outside its transaction, for outside_transaction_test.cpp
// (exo/outside_transaction.hpp). before_transaction() records its calls, counts
// how many run at once (in all and per account, the Kafka key), looks at the
// daemon's PostgreSQL sessions while it runs, and hands "outside:<event id>"
// to handle(), which writes it with the record in outside_applied.
//
// Cues (the event id's prefix): fail-once-* throws RetryableError from
// before_transaction() on the record's first attempt; refused-* always throws
// PermanentError from it; boom-* throws RetryableError from handle() on the
// record's first attempt (the call succeeded); held-* waits in
// before_transaction() until the test lets held calls go (let_held_go(),
// bounded by 60 s so a test that never does fails instead of hanging).
#include <algorithm>
#include <any>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include <exo/batch_handler.hpp>
#include <exo/errors.hpp>
#include <exo/handler.hpp>
#include <exo/outside_transaction.hpp>

namespace exo::testing::outside {

// Set by the test before the daemon starts.
inline std::string observer_uri;  // the harness's database, for pg_stat_activity
inline std::string session_like;  // the application_name pattern of the daemon's slots
inline std::chrono::milliseconds pause{0};

inline std::mutex mutex;
inline std::map<std::string, std::vector<std::string>> calls;  // account -> event ids, call order
inline std::map<std::string, int> account_in_flight;
inline bool account_overlapped = false;  // two calls of one account at once
inline std::atomic<int> in_flight{0};
inline std::atomic<int> max_in_flight{0};
// Calls that found one of the daemon's slot sessions inside a transaction.
inline std::atomic<int> saw_open_transaction{0};
inline std::atomic<int> looked{0};
// held-* calls: how many came to wait, and whether they may go on.
inline std::condition_variable held_changed;
inline int held_arrived = 0;
inline bool held_go = false;

inline int held_calls() {
    std::lock_guard lock(mutex);
    return held_arrived;
}

inline void let_held_go() {
    std::lock_guard lock(mutex);
    held_go = true;
    held_changed.notify_all();
}

inline void reset() {
    std::lock_guard lock(mutex);
    calls.clear();
    account_in_flight.clear();
    account_overlapped = false;
    in_flight = 0;
    max_in_flight = 0;
    saw_open_transaction = 0;
    looked = 0;
    held_arrived = 0;
    held_go = false;
}

inline void create_table(const std::string& uri) {
    pqxx::connection c(uri);
    pqxx::nontransaction tx(c);
    tx.exec(
        "CREATE TABLE outside_applied (serial bigserial PRIMARY KEY, event_id text NOT NULL, "
        "account_id text NOT NULL, sequence_id bigint NOT NULL, handed_over text)");
}

}  // namespace exo::testing::outside

namespace exo::testing {

// The outside work both handlers share.
class RecordingOutside : public OutsideTransaction {
public:
    void before_transaction(OutsideContext& ctx) const override {
        namespace o = outside;
        const auto& doc = ctx.json();
        const auto account = doc.at("accountId").get<std::string>();
        const auto& event = ctx.idempotency_key();
        {
            std::lock_guard lock(o::mutex);
            o::calls[account].push_back(event);
            if (++o::account_in_flight[account] > 1) o::account_overlapped = true;
        }
        const int now = ++o::in_flight;
        int seen = o::max_in_flight.load();
        while (now > seen && !o::max_in_flight.compare_exchange_weak(seen, now)) {
        }
        look_at_sessions();
        std::this_thread::sleep_for(o::pause);
        if (event.rfind("held-", 0) == 0) {
            std::unique_lock lock(o::mutex);
            ++o::held_arrived;
            o::held_changed.wait_for(lock, std::chrono::seconds(60), [] { return o::held_go; });
        }
        --o::in_flight;
        {
            std::lock_guard lock(o::mutex);
            --o::account_in_flight[account];
        }
        if (event.rfind("fail-once-", 0) == 0 && ctx.attempt() == 1)
            throw RetryableError("the quote service timed out");
        if (event.rfind("refused-", 0) == 0) throw PermanentError("the quote service refused it");
        ctx.hand_over("outside:" + event);
    }

protected:
    // The record's row, with what its before_transaction() handed over (NULL: nothing).
    static void write(pqxx::transaction_base& tx, HandlerContext& ctx) {
        if (ctx.idempotency_key().rfind("boom-", 0) == 0 && ctx.attempt() == 1)
            throw RetryableError("handle() failed after its call");
        const auto& doc = ctx.json();
        const auto* handed = std::any_cast<std::string>(&ctx.handed_over());
        tx.exec_params(
            "INSERT INTO outside_applied (event_id, account_id, sequence_id, handed_over) "
            "VALUES ($1, $2, $3, $4)",
            ctx.idempotency_key(), doc.at("accountId").get<std::string>(),
            doc.at("sequenceId").get<std::int64_t>(),
            handed != nullptr ? std::optional<std::string>(*handed) : std::nullopt);
    }

private:
    // Whether one of the daemon's slots is inside a transaction now: while
    // before_transaction() runs, none may be (one worker, one slot).
    static void look_at_sessions() {
        namespace o = outside;
        pqxx::connection c(o::observer_uri);
        pqxx::nontransaction tx(c);
        const auto open = tx.exec_params1(
                                "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                "current_database() AND application_name LIKE $1 AND state LIKE "
                                "'idle in transaction%'",
                                o::session_like)[0]
                              .as<int>();
        ++o::looked;
        if (open > 0) ++o::saw_open_transaction;
    }
};

class OutsideRecordingHandler final : public Handler, public RecordingOutside {
public:
    void handle(HandlerContext& ctx) override { write(ctx.transaction(), ctx); }
};

class OutsideRecordingBatchHandler final : public BatchHandler, public RecordingOutside {
public:
    void handle_batch(BatchContext& ctx) override {
        for (auto& record : ctx.records()) write(ctx.transaction(), record);
    }
};

}  // namespace exo::testing
