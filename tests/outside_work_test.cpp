// Handlers' work outside the transaction (runtime/outside_work.hpp,
// exo/outside_transaction.hpp), without servers: which records run
// before_transaction(), in what order, on which threads, and what a failure
// leaves behind.
#include <doctest/doctest.h>

#include <algorithm>
#include <any>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <pqxx/except>

#include <exo/errors.hpp>
#include <exo/outside_transaction.hpp>
#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "protocol/batch.hpp"
#include "protocol/binding_handlers.hpp"
#include "protocol/handler_registry.hpp"
#include "protocol/steps/transaction_step.hpp"
#include "runtime/outside_work.hpp"

using namespace std::chrono_literals;

namespace {

// What the handler saw, shared by every instance and thread of one test.
struct Seen {
    std::mutex mutex;
    std::vector<std::string> calls;                  // "key:offset", in call order
    std::map<std::string, std::thread::id> threads;  // by "key:offset"
    std::map<std::string, int> in_flight;            // by ordering key
    bool overlapped_within_a_key = false;
    int running = 0, most_running = 0;  // calls in progress, of every key
    // Calls of the first `gate` distinct keys wait here until all of them are in,
    // so the test knows lanes ran at the same time (bounded: a sequential run
    // fails instead of hanging).
    int gate = 0;
    std::set<std::string> at_gate;
    std::condition_variable gate_changed;
    bool gate_timed_out = false;
    std::function<void(const std::string& call)> on_call;  // set: run in each call
};

// before_transaction(): records the call, hands over "seen <offset>", throws on
// cue ("fail" / "permanent" in the payload).
class Recording final : public exo::Handler, public exo::OutsideTransaction {
public:
    explicit Recording(Seen& seen) : seen_(seen) {}
    void handle(exo::HandlerContext&) override {}
    void before_transaction(exo::OutsideContext& ctx) const override {
        const auto& r = ctx.record();
        const std::string key = r.key.value_or("");
        const std::string call = key + ":" + std::to_string(r.offset.value);
        {
            std::unique_lock lock(seen_.mutex);
            seen_.calls.push_back(call);
            seen_.threads[call] = std::this_thread::get_id();
            if (++seen_.in_flight[key] > 1) seen_.overlapped_within_a_key = true;
            seen_.most_running = std::max(seen_.most_running, ++seen_.running);
            if (seen_.gate > 0 && seen_.at_gate.size() < static_cast<std::size_t>(seen_.gate) &&
                !seen_.at_gate.contains(key)) {
                seen_.at_gate.insert(key);
                seen_.gate_changed.notify_all();
                if (!seen_.gate_changed.wait_for(lock, 10s, [&] {
                        return seen_.at_gate.size() == static_cast<std::size_t>(seen_.gate);
                    }))
                    seen_.gate_timed_out = true;
            }
        }
        if (seen_.on_call) seen_.on_call(call);
        // A short wait, so calls of a lane could overlap if run so.
        std::this_thread::sleep_for(2ms);
        {
            std::lock_guard lock(seen_.mutex);
            --seen_.in_flight[key];
            --seen_.running;
        }
        if (r.value.find("permanent") != std::string::npos)
            throw exo::PermanentError("the service refused it");
        if (r.value.find("fail") != std::string::npos)
            throw exo::RetryableError("the service timed out");
        ctx.hand_over(std::string("seen ") + std::to_string(r.offset.value));
    }

private:
    Seen& seen_;
};

// Has no outside work: its records are left alone.
class Plain final : public exo::Handler {
public:
    void handle(exo::HandlerContext&) override {}
};

struct Fixture {
    explicit Fixture(Seen& seen) {
        exo::BindingConfig outside;
        outside.topic = "quotes";
        outside.handler = "recording";
        exo::BindingConfig plain;
        plain.topic = "plain";
        plain.handler = "plain";
        config.bindings = {outside, plain};
        registry.add("recording", [&seen](const exo::HandlerOptions&) {
            return std::make_unique<Recording>(seen);
        });
        registry.add("plain", [](const exo::HandlerOptions&) { return std::make_unique<Plain>(); });
        handlers = std::make_unique<exo::BindingHandlers>(config.bindings, registry);
    }
    // A record of `topic` partition 0 at `offset` whose ordering key (and Kafka key) is `key`.
    exo::PendingRecord record(const std::string& key, std::int64_t offset,
                              const std::string& value = "{}",
                              const std::string& topic = "quotes") {
        exo::PendingRecord p;
        p.record.topic = exo::Topic{topic};
        p.record.partition = exo::Partition{0};
        p.record.offset = exo::Offset{offset};
        p.record.key = key;
        p.record.value = value;
        p.ordering_key = key;
        return p;
    }
    // The batch of `records`, each bound to its topic's binding.
    std::unique_ptr<exo::Batch> batch(std::vector<exo::PendingRecord> records) {
        auto out = std::make_unique<exo::Batch>(std::move(records));
        for (auto& r : *out)
            r.binding = r.pending.record.topic.value == "quotes" ? &config.bindings[0]
                                                                 : &config.bindings[1];
        return out;
    }

    exo::Config config;
    exo::HandlerRegistry registry;
    std::unique_ptr<exo::BindingHandlers> handlers;
    exo::PipelineStats stats{{"quotes", "plain"}};
};

exo::BatchRecord& at(exo::Batch& batch, std::size_t n) {
    return *(batch.begin() + static_cast<std::ptrdiff_t>(n));
}

std::string handed(const exo::BatchRecord& r) {
    return r.handed_over.has_value() ? std::any_cast<std::string>(r.handed_over) : "(nothing)";
}

}  // namespace

TEST_CASE(
    "outside work runs different keys' records at the same time and each key's records in order, "
    "one at a time, and hands each record its value") {
    Seen seen;
    seen.gate = 3;  // the first calls of a, b and c must all be in before_transaction at once
    Fixture f(seen);
    exo::OutsideWork work(4, f.stats, *spdlog::default_logger());
    std::vector<exo::PendingRecord> records;
    for (int i = 0; i < 12; ++i) records.push_back(f.record(std::string(1, "abc"[i % 3]), i));
    auto batch = f.batch(std::move(records));

    work.run(*batch, *f.handlers);

    CHECK_FALSE(seen.gate_timed_out);
    CHECK_FALSE(seen.overlapped_within_a_key);
    REQUIRE(seen.calls.size() == 12);
    for (const char key : std::string("abc")) {
        std::vector<std::string> of_key;
        for (const auto& call : seen.calls)
            if (call[0] == key) of_key.push_back(call);
        INFO("key " << key);
        CHECK(std::is_sorted(of_key.begin(), of_key.end(), [](const auto& x, const auto& y) {
            return std::stoi(x.substr(2)) < std::stoi(y.substr(2));
        }));
    }
    for (auto& r : *batch) {
        CHECK(r.is_pending());
        CHECK_FALSE(r.outside_failure);
        CHECK(handed(r) == "seen " + std::to_string(r.pending.record.offset.value));
    }
    CHECK(f.stats.outside_failures == 0);
    CHECK(f.stats.topics().at("quotes")->outside_duration.snapshot().count() == 12);
}

TEST_CASE(
    "a record whose outside work throws keeps what it threw, and the records of its key behind it "
    "run nothing and are put back behind it; other keys go on") {
    Seen seen;
    Fixture f(seen);
    exo::OutsideWork work(2, f.stats, *spdlog::default_logger());
    auto batch = f.batch({f.record("a", 0), f.record("b", 1, "{\"fail\":1}"), f.record("a", 2),
                          f.record("b", 3), f.record("c", 4, "{\"permanent\":1}"), f.record("b", 5),
                          f.record("c", 6)});

    work.run(*batch, *f.handlers);

    CHECK(std::count(seen.calls.begin(), seen.calls.end(), "b:3") == 0);
    CHECK(std::count(seen.calls.begin(), seen.calls.end(), "b:5") == 0);
    CHECK(std::count(seen.calls.begin(), seen.calls.end(), "c:6") == 0);
    CHECK(seen.calls.size() == 4);  // a:0, b:1, a:2, c:4
    // The failed records: still pending, their failure kept for the transaction step.
    for (std::size_t n : {1u, 4u}) {
        INFO("record " << n);
        CHECK(at(*batch, n).is_pending());
        CHECK(at(*batch, n).outside_failure);
    }
    CHECK_THROWS_AS(std::rethrow_exception(at(*batch, 1).outside_failure), exo::RetryableError);
    CHECK_THROWS_AS(std::rethrow_exception(at(*batch, 4).outside_failure), exo::PermanentError);
    for (std::size_t n : {3u, 5u, 6u}) {
        INFO("record " << n);
        CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, n).fate()));
        CHECK(std::get<exo::fate::Requeue>(at(*batch, n).fate()).delay == 0ms);
        CHECK_FALSE(at(*batch, n).outside_failure);
    }
    CHECK(handed(at(*batch, 0)) == "seen 0");
    CHECK(handed(at(*batch, 2)) == "seen 2");
    CHECK(f.stats.outside_failures == 2);
}

TEST_CASE(
    "outside work skips records already decided and records whose handler has none, and with no "
    "threads runs on the caller's") {
    Seen seen;
    Fixture f(seen);
    exo::OutsideWork work(0, f.stats, *spdlog::default_logger());
    auto batch = f.batch({f.record("a", 0), f.record("b", 1), f.record("c", 2),
                          f.record("d", 3, "{}", "plain"), f.record("e", 4)});
    at(*batch, 1).finish(exo::Outcome::duplicate_redis);  // its claim answered DUPLICATE
    at(*batch, 2).dead_letter("no key");                  // judged before its transaction

    work.run(*batch, *f.handlers);

    CHECK(seen.calls == std::vector<std::string>{"a:0", "e:4"});
    CHECK(seen.threads["a:0"] == std::this_thread::get_id());
    CHECK(seen.threads["e:4"] == std::this_thread::get_id());
    CHECK(handed(at(*batch, 1)) == "(nothing)");
    CHECK(handed(at(*batch, 3)) == "(nothing)");
    CHECK(handed(at(*batch, 4)) == "seen 4");
}

TEST_CASE(
    "a dead-letter verdict carried from an earlier try is taken before the outside work: it and "
    "the records of its lane behind it call nothing, other lanes do") {
    Seen seen;
    Fixture f(seen);
    exo::OutsideWork work(2, f.stats, *spdlog::default_logger());
    auto batch = f.batch({f.record("a", 0), f.record("b", 1), f.record("a", 2), f.record("b", 3)});
    at(*batch, 0).pending.dead_letter = exo::DeadLetterVerdict{"bad payload", true, false};

    exo::take_carried_dead_letters(*batch);
    work.run(*batch, *f.handlers);

    CHECK(at(*batch, 0).is_dead_letter());
    CHECK(at(*batch, 0).why() == "bad payload");
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, 2).fate()));  // behind it in lane a
    CHECK(at(*batch, 1).is_pending());                                        // lane b is not held
    CHECK(at(*batch, 3).is_pending());
    CHECK(seen.calls == std::vector<std::string>{"b:1", "b:3"});
}

namespace {

// What outside_failure() makes of `thrown`, rethrown.
template <class E>
std::exception_ptr translated(E thrown) {
    return exo::outside_failure(std::make_exception_ptr(std::move(thrown)));
}

}  // namespace

TEST_CASE(
    "a before_transaction() failure that reads as exo's own sessions failing is the handler's: "
    "a lost connection its dependency down, an aborted transaction or lock timeout a retryable "
    "failure; the handler's own errors stay as thrown") {
    CHECK_THROWS_AS(std::rethrow_exception(translated(pqxx::broken_connection("gone"))),
                    exo::DependencyError);
    CHECK_THROWS_WITH(std::rethrow_exception(translated(pqxx::broken_connection("gone"))),
                      doctest::Contains("the handler's own connection failed: gone"));
    CHECK_THROWS_AS(std::rethrow_exception(translated(pqxx::in_doubt_error("unknown"))),
                    exo::DependencyError);
    CHECK_THROWS_AS(
        std::rethrow_exception(translated(pqxx::sql_error("ERROR: x", "SELECT 1", "25P02"))),
        exo::RetryableError);
    CHECK_THROWS_AS(
        std::rethrow_exception(translated(pqxx::sql_error("ERROR: x", "SELECT 1", "55P03"))),
        exo::RetryableError);
    CHECK_THROWS_AS(std::rethrow_exception(translated(exo::PermanentError("no"))),
                    exo::PermanentError);
    CHECK_THROWS_AS(std::rethrow_exception(translated(exo::DependencyError("down"))),
                    exo::DependencyError);
    CHECK_THROWS_AS(std::rethrow_exception(translated(exo::RetryableError("later"))),
                    exo::RetryableError);
    // A constraint violation of the handler's own statement: as classify() says (permanent).
    CHECK_THROWS_AS(
        std::rethrow_exception(translated(pqxx::unique_violation("ERROR: dup", "INSERT", "23505"))),
        pqxx::unique_violation);
    CHECK_THROWS_AS(std::rethrow_exception(translated(42)), int);
}

TEST_CASE(
    "abandoned calls: the call in progress finishes and hands over, no other starts, and every "
    "record not called is put back; the next batch calls again") {
    Seen seen;
    Fixture f(seen);
    exo::OutsideWork work(0, f.stats, *spdlog::default_logger());
    seen.on_call = [&](const std::string& call) {
        if (call == "a:1") work.abandon_calls();  // a revoke's deadline passed meanwhile
    };
    auto batch = f.batch({f.record("a", 0), f.record("a", 1), f.record("a", 2), f.record("b", 3)});

    work.run(*batch, *f.handlers);

    CHECK(seen.calls == std::vector<std::string>{"a:0", "a:1"});
    CHECK(handed(at(*batch, 1)) == "seen 1");
    CHECK(at(*batch, 1).is_pending());  // called: on to its transaction
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, 2).fate()));
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, 3).fate()));
    CHECK(f.stats.outside_failures == 0);

    seen.on_call = nullptr;
    auto next = f.batch({f.record("a", 2), f.record("b", 3)});
    work.run(*next, *f.handlers);
    CHECK(seen.calls.size() == 4);
    CHECK(at(*next, 0).is_pending());
    CHECK(at(*next, 1).is_pending());
}

namespace {

// Calls held until the test lets them go, one by one or all at once (bounded
// by 30 s, longer than the tests' 10 s waits, so a wait fails before a held
// call goes on by itself).
class Gate {
public:
    // In a call (Seen::on_call): waits until this call is let go.
    void pass(const std::string& call) {
        std::unique_lock lock(mutex_);
        arrived_.push_back(call);
        changed_.notify_all();
        changed_.wait_for(lock, 30s, [&] { return open_ || let_go_.contains(call); });
    }
    // Whether `n` calls have come to the gate within 10 s.
    bool wait_for_arrivals(std::size_t n) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 10s, [&] { return arrived_.size() >= n; });
    }
    std::vector<std::string> arrived() {
        std::lock_guard lock(mutex_);
        return arrived_;
    }
    void let_go(const std::string& call) {
        std::lock_guard lock(mutex_);
        let_go_.insert(call);
        changed_.notify_all();
    }
    void open() {
        std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::string> arrived_;  // in arrival order
    std::set<std::string> let_go_;
    bool open_ = false;
};

// Opens its gate when it goes: declared after the threads running batches, so
// none of them is joined while a call of theirs waits at the gate.
struct OpenOnExit {
    Gate& gate;
    ~OpenOnExit() { gate.open(); }
};

// Records of keys `prefix`0 .. `prefix`<n - 1>, one each, from `offset` on.
std::vector<exo::PendingRecord> keys(Fixture& f, const std::string& prefix, int n,
                                     std::int64_t offset) {
    std::vector<exo::PendingRecord> out;
    for (int i = 0; i < n; ++i) out.push_back(f.record(prefix + std::to_string(i), offset + i));
    return out;
}

// run() on a thread of its own; returned() says whether it has.
class Running {
public:
    Running(exo::OutsideWork& work, exo::Batch& batch, const exo::BindingHandlers& handlers)
        : thread_([&, this] {
              work.run(batch, handlers);
              std::lock_guard lock(mutex_);
              returned_ = true;
              changed_.notify_all();
          }) {}
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    ~Running() { thread_.join(); }
    std::thread::id id() const { return thread_.get_id(); }
    // Whether run() returned within 10 s.
    bool returned() {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 10s, [&] { return returned_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool returned_ = false;
    std::thread thread_;  // last: it uses the above
};

}  // namespace

TEST_CASE(
    "a batch never waits for another batch's calls: with both outside threads held in a batch of "
    "twenty lanes, another batch's quick calls all return on its own thread") {
    Seen seen;
    Fixture f(seen);
    Gate gate;
    seen.on_call = [&](const std::string& call) {
        if (call.starts_with("slow")) gate.pass(call);  // a 300 ms call that takes until let go
    };
    exo::OutsideWork work(2, f.stats, *spdlog::default_logger());
    auto slow = f.batch(keys(f, "slow", 20, 0));
    auto quick_alone = f.batch(keys(f, "alone", 1, 100));
    auto quick = f.batch(keys(f, "quick", 2, 200));
    {
        Running slow_slot(work, *slow, *f.handlers);
        std::optional<Running> quick_alone_slot, quick_slot;
        const OpenOnExit opener{gate};
        // The slow batch's own thread and both outside threads are in its calls.
        REQUIRE(gate.wait_for_arrivals(3));
        quick_alone_slot.emplace(work, *quick_alone, *f.handlers);
        CHECK(quick_alone_slot->returned());
        quick_slot.emplace(work, *quick, *f.handlers);
        // Before: it waited for its helper, queued behind the slow batch's.
        CHECK(quick_slot->returned());
        CHECK(gate.arrived().size() == 3);  // the slow calls still held meanwhile
    }
    for (auto* batch : {slow.get(), quick_alone.get(), quick.get()})
        for (auto& r : *batch) {
            INFO(*r.pending.record.key);
            CHECK(r.is_pending());
            CHECK(handed(r) == "seen " + std::to_string(r.pending.record.offset.value));
        }
    CHECK(seen.calls.size() == 23);
    CHECK(seen.most_running <= 2 + 3);  // the outside threads and each batch's own
}

TEST_CASE(
    "an outside thread let go by one batch's lane takes a lane of the batch with fewer of its "
    "lanes on the outside threads, not the next lane of the batch that came first") {
    Seen seen;
    Fixture f(seen);
    Gate gate;
    seen.on_call = [&](const std::string& call) { gate.pass(call); };
    exo::OutsideWork work(1, f.stats, *spdlog::default_logger());
    auto first = f.batch(keys(f, "first", 4, 0));
    auto second = f.batch(keys(f, "second", 3, 100));
    {
        Running first_slot(work, *first, *f.handlers);
        std::optional<Running> second_slot;
        const OpenOnExit opener{gate};
        REQUIRE(gate.wait_for_arrivals(2));  // its own thread's lane and the outside thread's
        second_slot.emplace(work, *second, *f.handlers);
        REQUIRE(gate.wait_for_arrivals(3));  // its own thread's lane
        // Let go the first batch's lane on the outside thread.
        std::string on_outside;
        for (const auto& call : gate.arrived()) {
            std::lock_guard lock(seen.mutex);
            if (call.starts_with("first") && seen.threads.at(call) != first_slot.id())
                on_outside = call;
        }
        REQUIRE_FALSE(on_outside.empty());
        gate.let_go(on_outside);
        REQUIRE(gate.wait_for_arrivals(4));
        const std::string taken = gate.arrived()[3];
        std::lock_guard lock(seen.mutex);
        CHECK(taken.starts_with("second"));
        CHECK(seen.threads.at(taken) == seen.threads.at(on_outside));
    }
    CHECK(seen.calls.size() == 7);
    for (auto* batch : {first.get(), second.get()})
        for (auto& r : *batch)
            CHECK(handed(r) == "seen " + std::to_string(r.pending.record.offset.value));
}

TEST_CASE(
    "abandoned calls on the outside threads: the batch returns once its calls in progress finish, "
    "and its lanes no thread had started call nothing and are put back") {
    Seen seen;
    Fixture f(seen);
    Gate gate;
    seen.on_call = [&](const std::string& call) { gate.pass(call); };
    exo::OutsideWork work(2, f.stats, *spdlog::default_logger());
    auto batch = f.batch(keys(f, "held", 6, 0));
    {
        Running slot(work, *batch, *f.handlers);
        const OpenOnExit opener{gate};
        REQUIRE(gate.wait_for_arrivals(3));  // its own thread and both outside threads
        work.abandon_calls();                // a revoke's deadline passed meanwhile
        gate.open();
        CHECK(slot.returned());
    }
    CHECK(seen.calls.size() == 3);
    for (auto& r : *batch) {
        const auto& record = r.pending.record;
        const std::string call = *record.key + ":" + std::to_string(record.offset.value);
        INFO(call);
        const bool called = std::count(seen.calls.begin(), seen.calls.end(), call) == 1;
        CHECK(exo::fate_name(r.fate()) == (called ? "pending" : "requeue"));
        CHECK(handed(r) == (called ? "seen " + std::to_string(record.offset.value) : "(nothing)"));
    }
}
