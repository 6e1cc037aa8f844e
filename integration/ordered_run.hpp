#pragma once
// What the ordering tests share (key_ordering_test.cpp, key_ordering_more_test.cpp;
// issue 20): a harness whose handler is order_recording (ordering_handlers.hpp),
// its applied_order table and counters fresh, its daemon, and readers of what it
// applied.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "ordering_handlers.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

namespace exo::testing {

using namespace std::chrono_literals;

// One partition, one worker with 4 slots, no sequence unless a test adds it.
inline HarnessOptions order_recording(const char* name, Ordering ordering) {
    return {.name = name,
            .partitions = 1,
            .with_sequence = false,  // exo's strict sequences would hide a key applied out of order
            .handler = "order_recording",
            .slow_for = 0ms,       // the handler's pause per call
            .max_attempts = 1000,  // a held-* record is retried, never dead-lettered
            .ordering = ordering,
            .concurrency = 4};
}

// A harness whose handler records its order, with a fresh table and counters, and
// its daemon.
struct OrderedRun {
    explicit OrderedRun(HarnessOptions options) : h(std::move(options)) {
        ordering::reset();
        ordering::create_applied_order_table(h.postgres_uri());
    }
    void start() { daemon.emplace(h.config(), h.registry(), h.bootstrap()); }
    // Waits until `gate` (a gate-* record, named for a failed wait) is in its handler.
    void wait_for_gate(const std::string& gate, std::chrono::milliseconds timeout = 30s) const {
        wait_until(
            gate + " in its handler", timeout, [] { return ordering::gate_waiting.load(); },
            [](int n) { return n == 1; });
    }
    // Opens the gate, waits until the group committed the whole topic, stops the daemon.
    void finish() {
        ordering::gate_open = true;
        REQUIRE(h.wait_until_consumed(90s));
        daemon->stop();
    }
    std::int64_t applied(const std::string& where = "true") const {
        return h.count("SELECT count(*) FROM applied_order WHERE " + where);
    }
    std::int64_t committed(int partition) const {
        return committed_offset(h.bootstrap(), h.config().kafka.group_id, h.topic(), partition);
    }
    // Event ids in the order they were applied.
    std::vector<std::string> events() const {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction tx(c);
        std::vector<std::string> out;
        for (const auto& row : tx.exec("SELECT event_id FROM applied_order ORDER BY serial"))
            out.push_back(row[0].as<std::string>());
        return out;
    }
    // Per account, its sequence ids in the order they were applied ("1 2 3").
    std::map<std::string, std::string> sequences_by_account() const {
        pqxx::connection c(h.postgres_uri());
        pqxx::nontransaction tx(c);
        std::map<std::string, std::string> out;
        for (const auto& row :
             tx.exec("SELECT account_id, sequence_id FROM applied_order ORDER BY serial")) {
            auto& sequences = out[row[0].as<std::string>()];
            sequences += (sequences.empty() ? "" : " ") + row[1].as<std::string>();
        }
        return out;
    }
    // Each event id applied exactly once.
    void check_each_once(std::size_t expected) const {
        auto all = events();
        CHECK(all.size() == expected);
        CHECK(std::set<std::string>(all.begin(), all.end()).size() == expected);
    }
    PipelineHarness h;
    std::optional<RunningDaemon> daemon;
    ordering::OpenGateOnExit gate;  // destroyed first: a gate-* call returns before the stop
};

// Where `event` is in `events`; fails the test if it is not there.
inline std::size_t position(const std::vector<std::string>& events, const std::string& event) {
    auto it = std::find(events.begin(), events.end(), event);
    REQUIRE_MESSAGE(it != events.end(), event << " was never applied");
    return static_cast<std::size_t>(it - events.begin());
}

}  // namespace exo::testing
