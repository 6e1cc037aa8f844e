#pragma once
// The workload of the per-key concurrency scenarios: `records` records over `keys`
// business keys, each record's Kafka key its business key, so the producer's partitioner
// (librdkafka's default, a hash of the key) spreads the keys over the partitions as it
// would in production. Keys are drawn at random (seeded): about records/keys records per
// key, interleaved. Each record carries its position in its key's history (seq 1, 2, ...),
// which is the order it must be applied in.
//
// check_keyed reads what the handler wrote (keyed_handler.hpp) and says what is wrong:
// a record never applied, applied twice, or applied at another rank of its key than its seq.
#include <cstdint>
#include <string>
#include <vector>

#include "bench_world.hpp"

namespace exo::bench {

struct KeyedRecord {
    std::string event_id;  // the idempotency key (binding key: json /eventId)
    std::string key;       // the Kafka record key
    int seq = 0;           // 1-based position among its key's records, in produced order
    std::string payload;   // {"eventId": ..., "seq": ...}
};

struct KeyedWorkload {
    std::string topic;
    int partitions = 0;
    int keys = 0;
    std::vector<KeyedRecord> records;
    std::vector<std::int64_t> per_partition;  // records per partition, read back after producing
};

// Generates the records and creates the topic (and its .dlq) with `partitions` partitions.
KeyedWorkload make_keyed_workload(BenchWorld& world, const std::string& prefix, int records,
                                  int keys, int partitions, std::uint64_t seed);
// Produces every record, partitioned by key, and waits for the acknowledgements. Throws
// KafkaError, or std::runtime_error if the cluster did not keep them all. Returns seconds.
double produce_keyed(BenchWorld& world, KeyedWorkload& w);

// Empty when every record was applied exactly once and at its seq among its key's records;
// otherwise the counts of what is wrong, with an example of each.
std::string check_keyed(const Isolation& iso, const KeyedWorkload& w);

}  // namespace exo::bench
