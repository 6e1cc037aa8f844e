#include "paced_producer.hpp"

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>
#include <unordered_map>

#include "kafka/producer.hpp"

namespace exo::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t wall_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

PacedSend produce_paced(const std::string& bootstrap, const TopicWorkload& w, double rate) {
    PacedSend out;
    out.sent_us.assign(w.size(), 0);
    // librdkafka's default linger (5 ms) is part of the measured latency; a shorter one
    // would make the in-process mock broker burn the CPU the consumer needs.
    KafkaProducer producer(ProducerOptions{bootstrap, {{"linger.ms", "5"}}});
    auto start = Clock::now();
    auto due = [&](std::size_t i) {
        return start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(static_cast<double>(i) / rate));
    };
    // Every millisecond, produce what is due: at most 1000 wake-ups a second.
    for (std::size_t i = 0; i < w.size();) {
        auto now = Clock::now();
        if (due(i) > now) {
            std::this_thread::sleep_until(std::min(due(i), now + std::chrono::milliseconds(1)));
            continue;
        }
        for (; i < w.size() && due(i) <= now; ++i) {
            const auto& m = w.workload.messages[i];
            out.sent_us[i] = wall_us();
            producer.produce({w.topic, m.partition, m.payment.account_id, w.payloads[i], {}});
        }
    }
    producer.flush(std::chrono::seconds(60));
    out.achieved_rate =
        static_cast<double>(w.size()) / std::chrono::duration<double>(Clock::now() - start).count();
    return out;
}

void commit_latencies(const Isolation& iso, const TopicWorkload& w, const PacedSend& sent,
                      double warm_up_s, ScenarioResult& r) {
    // When each event was first produced (a duplicate re-sends an earlier event later).
    std::unordered_map<std::string, std::int64_t> first_sent;
    first_sent.reserve(w.size());
    for (std::size_t i = 0; i < w.size() && i < sent.sent_us.size(); ++i)
        first_sent.emplace(w.workload.messages[i].payment.event_id, sent.sent_us[i]);
    const std::int64_t first_us = sent.first_us();

    pqxx::connection c(iso.uri);
    pqxx::nontransaction tx(c);
    if (tx.exec("SHOW track_commit_timestamp")[0][0].as<std::string>() != "on") {
        r.latency_note =
            "track_commit_timestamp is off in PostgreSQL (scripts/bench.sh turns it on): commit "
            "latency not measured";
        return;
    }
    auto rows = tx.exec(
        "SELECT event_id, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint"
        " FROM ledger_entries");
    for (const auto& row : rows) {
        if (row[1].is_null()) continue;
        auto it = first_sent.find(row[0].as<std::string>());
        if (it == first_sent.end()) continue;
        double ms = static_cast<double>(row[1].as<std::int64_t>() - it->second) / 1000.0;
        double at = static_cast<double>(it->second - first_us) / 1e6;
        if (at >= warm_up_s) r.commit_latency_ms.push_back(ms);
        r.commit_trace.emplace_back(at, ms);
    }
    std::sort(r.commit_trace.begin(), r.commit_trace.end());
    if (r.commit_trace.empty()) r.latency_note = "no commit timestamps found";
}

}  // namespace exo::bench
