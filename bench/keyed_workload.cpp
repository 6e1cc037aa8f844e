#include "keyed_workload.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <pqxx/pqxx>
#include <random>
#include <unordered_map>

#include "kafka/producer.hpp"

namespace exo::bench {

KeyedWorkload make_keyed_workload(BenchWorld& world, const std::string& prefix, int records,
                                  int keys, int partitions, std::uint64_t seed) {
    KeyedWorkload w;
    w.topic = fmt::format("bench_{}_{}", ::getpid(), prefix);
    w.partitions = partitions;
    w.keys = keys;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pick(0, keys - 1);
    std::vector<int> produced(static_cast<std::size_t>(keys), 0);
    w.records.reserve(static_cast<std::size_t>(records));
    for (int i = 0; i < records; ++i) {
        int k = pick(rng);
        KeyedRecord r;
        r.event_id = fmt::format("{}-{:06d}", prefix, i);
        r.key = fmt::format("key-{:05d}", k);
        r.seq = ++produced[static_cast<std::size_t>(k)];
        r.payload = fmt::format(R"({{"eventId":"{}","seq":{}}})", r.event_id, r.seq);
        w.records.push_back(std::move(r));
    }
    world.create_topic(w.topic, partitions);
    world.create_topic(w.topic + ".dlq", 1);
    return w;
}

double produce_keyed(BenchWorld& world, KeyedWorkload& w) {
    auto start = std::chrono::steady_clock::now();
    {
        // Idempotent (KafkaProducer's default): a key's records land in produced order.
        KafkaProducer producer(ProducerOptions{world.bootstrap(), {{"linger.ms", "20"}}});
        for (const auto& r : w.records)
            producer.produce({w.topic, std::nullopt, r.key, r.payload, {}});
        producer.flush(std::chrono::seconds(120));
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    w.per_partition = world.records_per_partition(w.topic, w.partitions);
    std::int64_t total = 0;
    for (auto n : w.per_partition) total += n;
    if (total != static_cast<std::int64_t>(w.records.size()))
        throw std::runtime_error(
            fmt::format("{} holds {} records, {} were produced", w.topic, total, w.records.size()));
    return seconds;
}

std::string check_keyed(const Isolation& iso, const KeyedWorkload& w) {
    std::unordered_map<std::string, const KeyedRecord*> by_event;
    for (const auto& r : w.records) by_event.emplace(r.event_id, &r);
    std::unordered_map<std::string, int> applied;
    std::size_t unknown = 0, doubled = 0, out_of_order = 0;
    std::string unknown_example, doubled_example, order_example;
    pqxx::connection c(iso.uri);
    pqxx::nontransaction tx(c);
    for (const auto& row : tx.exec("SELECT event_id, key, rank FROM keyed_effects ORDER BY id")) {
        auto event = row[0].as<std::string>();
        auto it = by_event.find(event);
        if (it == by_event.end()) {
            if (unknown++ == 0) unknown_example = event;
            continue;
        }
        if (++applied[event] == 2 && doubled++ == 0) doubled_example = event;
        const auto& r = *it->second;
        auto rank = row[2].as<int>();
        if (rank != r.seq && out_of_order++ == 0)
            order_example = fmt::format(
                "{} (key {}, produced as its record {}) was applied as "
                "its record {}",
                event, r.key, r.seq, rank);
    }
    std::size_t missing = 0;
    std::string missing_example;
    for (const auto& r : w.records)
        if (!applied.contains(r.event_id) && missing++ == 0) missing_example = r.event_id;
    std::string problems;
    if (missing > 0)
        problems += fmt::format("{} of {} records never applied (e.g. {}); ", missing,
                                w.records.size(), missing_example);
    if (doubled > 0)
        problems +=
            fmt::format("{} records applied more than once (e.g. {}); ", doubled, doubled_example);
    if (out_of_order > 0)
        problems += fmt::format("{} records applied out of their key's order (e.g. {}); ",
                                out_of_order, order_example);
    if (unknown > 0)
        problems += fmt::format("{} effect rows of events never produced (e.g. {}); ", unknown,
                                unknown_example);
    return problems;
}

}  // namespace exo::bench
