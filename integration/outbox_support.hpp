#pragma once
// What the outbox tests share: the backlog as PostgreSQL has it, a topic's
// size, rows committed as a handler's transaction would, numbered per key so
// order can be checked, and the relay's producer.
#include <doctest/doctest.h>

#include <map>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "outbox/outbox_writer.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"

namespace exo::testing {

inline std::int64_t pending(const PipelineHarness& h) {
    return h.count("SELECT count(*) FROM exo_outbox_pending");
}

inline std::int64_t topic_size(const PipelineHarness& h, const std::string& topic, int partitions) {
    std::int64_t total = 0;
    for (int p = 0; p < partitions; ++p) total += partition_end(h.bootstrap(), topic, p);
    return total;
}

// Commits `messages` to the outbox as a handler's transaction of `group`
// (default: the harness's) would.
inline void emit_committed(const PipelineHarness& h, const std::vector<OutboxMessage>& messages,
                           std::string group = {}) {
    if (group.empty()) group = h.config().kafka.group_id;
    pqxx::connection c(h.postgres_uri());
    prepare_outbox_statements(c);
    pqxx::work tx(c);
    write_outbox(tx, group, messages);
    tx.commit();
}

// `per_key` records for each of `keys` keys, interleaved, valued "<key>#<n>" (n from 1).
inline std::vector<OutboxMessage> numbered(const std::string& topic, int keys, int per_key,
                                           const std::string& prefix = "key-") {
    std::vector<OutboxMessage> out;
    for (int n = 1; n <= per_key; ++n)
        for (int k = 0; k < keys; ++k) {
            const std::string key = prefix + std::to_string(k);
            out.push_back({topic, key, key + "#" + std::to_string(n), {}});
        }
    return out;
}

// Checks each key's records arrived as 1, 2, 3... (order kept, none twice) and
// returns how many arrived.
inline std::size_t check_per_key_order(const std::vector<Record>& records) {
    std::map<std::string, int> last;
    for (const auto& r : records) {
        const auto hash = r.value.find('#');
        REQUIRE(hash != std::string::npos);
        const auto key = r.value.substr(0, hash);
        const int n = std::stoi(r.value.substr(hash + 1));
        CHECK_MESSAGE(n == last[key] + 1, key << ": " << n << " after " << last[key]);
        last[key] = n;
    }
    return records.size();
}

inline ProducerOptions relay_producer(const PipelineHarness& h) {
    return {h.bootstrap(), {{"message.timeout.ms", "3000"}}, {}};
}

}  // namespace exo::testing
