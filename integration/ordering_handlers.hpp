#pragma once
// A handler for the ordering tests (key_ordering_test.cpp, issue 20): it records
// the order it applied records in, counts how many of its calls run at once, and
// holds records on cue until the test opens a gate.
//
// Effect: one row per record in applied_order (create_applied_order_table), in
// the record's own transaction, so a try that rolled back leaves none and a row
// is an applied record. The row's serial is taken when the handler runs: two
// records of one ordering key are never in flight at once, so their serials are
// their apply order (records of different keys interleave, as they may).
//
// Cues (the event id's prefix):
//   gate-*  waits in the handler until the gate is open (a record in flight,
//           its transaction open, for as long as the test wants)
//   held-*  throws RetryableError until the gate is open (a NACKed key, retried
//           after its backoff); each try is counted in held_tries
//   flaky-* throws RetryableError on its first attempt (ctx.attempt() 1, each run
//           of it in its batch): put back and retried after its backoff, it then
//           passes; the last attempt seen per event id is in flaky_attempts
// Every call sleeps `pause` first, so calls of different keys overlap when exo
// runs them at once; the most calls seen at once is max_in_flight.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include <exo/errors.hpp>
#include <exo/handler.hpp>

namespace exo::testing::ordering {

inline std::atomic<bool> gate_open{false};
inline std::atomic<int> gate_waiting{0};  // gate-* calls waiting now
inline std::atomic<int> held_tries{0};
inline std::atomic<int> in_flight{0};
inline std::atomic<int> max_in_flight{0};
inline std::mutex flaky_mutex;
inline std::map<std::string, int> flaky_attempts;  // per flaky-* event id, under flaky_mutex

// The last attempt of one flaky-* record seen in the handler (0: none).
inline int flaky_attempt(const std::string& event) {
    std::lock_guard lock(flaky_mutex);
    auto it = flaky_attempts.find(event);
    return it == flaky_attempts.end() ? 0 : it->second;
}

// Closes the gate and zeroes the counters: each test case starts from here.
inline void reset() {
    gate_open = false;
    gate_waiting = 0;
    held_tries = 0;
    in_flight = 0;
    max_in_flight = 0;
    std::lock_guard lock(flaky_mutex);
    flaky_attempts.clear();
}

// Opens the gate when it goes out of scope: declared after the daemon, it lets a
// failed test's gate-* call return before the daemon's stop waits for it, and a
// held-* record finish.
struct OpenGateOnExit {
    OpenGateOnExit() = default;
    OpenGateOnExit(const OpenGateOnExit&) = delete;
    OpenGateOnExit& operator=(const OpenGateOnExit&) = delete;
    ~OpenGateOnExit() { gate_open = true; }
};

// In the harness's schema (its URI pins the search_path).
inline void create_applied_order_table(const std::string& uri) {
    pqxx::connection c(uri);
    pqxx::nontransaction tx(c);
    tx.exec(
        "CREATE TABLE applied_order (serial bigserial PRIMARY KEY, event_id text NOT NULL, "
        "account_id text NOT NULL, sequence_id bigint NOT NULL)");
}

}  // namespace exo::testing::ordering

namespace exo::testing {

class OrderRecordingHandler final : public Handler {
public:
    explicit OrderRecordingHandler(std::chrono::milliseconds pause) : pause_(pause) {}

    void handle(HandlerContext& ctx) override {
        namespace o = ordering;
        const int now = ++o::in_flight;
        int seen = o::max_in_flight.load();
        while (now > seen && !o::max_in_flight.compare_exchange_weak(seen, now)) {
        }
        struct Leave {
            ~Leave() { --o::in_flight; }
        } leave;
        std::this_thread::sleep_for(pause_);

        const auto& key = ctx.idempotency_key();
        if (key.rfind("held-", 0) == 0) {
            ++o::held_tries;
            if (!o::gate_open) throw RetryableError("held until the test opens the gate");
        }
        if (key.rfind("flaky-", 0) == 0) {
            {
                std::lock_guard lock(o::flaky_mutex);
                o::flaky_attempts[key] = ctx.attempt();
            }
            if (ctx.attempt() == 1) throw RetryableError("flaky: fails its first attempt");
        }
        if (key.rfind("gate-", 0) == 0) {
            // Bounded, so a test that never opens the gate fails instead of hanging.
            ++o::gate_waiting;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            while (!o::gate_open && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            --o::gate_waiting;
            if (!o::gate_open) throw RetryableError("the gate stayed closed for 60 s");
        }
        const auto& doc = ctx.json();
        ctx.transaction().exec_params(
            "INSERT INTO applied_order (event_id, account_id, sequence_id) VALUES ($1, $2, $3)",
            key, doc.at("accountId").get<std::string>(), doc.at("sequenceId").get<std::int64_t>());
    }

private:
    std::chrono::milliseconds pause_;
};

}  // namespace exo::testing
