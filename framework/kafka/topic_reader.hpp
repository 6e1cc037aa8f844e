#pragma once
// Reads a topic the way a tool does, not the way the daemon consumes it: the
// partitions are assigned, never subscribed, so no consumer group is joined
// or rebalanced and nothing is committed; reading starts at the oldest record
// Kafka still keeps. Used by `exo dlq replay` (find a dead letter, or an
// original record by its coordinates) and `exo inspect`.
//
// Lifecycle: one reader per command; every read assigns what it needs and
// unassigns it again. Thread-safety: none.
// Errors: every method throws KafkaError when Kafka cannot be reached, refuses,
// or does not answer within the timeout (the message says which topic); when
// librdkafka reported a failure of the security settings meanwhile (SecuritySettings
// in kafka_error.hpp), that failure instead, which says what to fix.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <exo/record.hpp>
#include "kafka/kafka_error.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {

class TopicReader {
public:
    // `properties`: extra librdkafka properties (security settings); the ones exo
    // reserves for its consumer (group.id, offset commits) are ignored. Throws
    // KafkaConfigError for a bad property.
    TopicReader(const std::string& bootstrap_servers,
                const std::map<std::string, std::string>& properties);
    TopicReader(const TopicReader&) = delete;
    TopicReader& operator=(const TopicReader&) = delete;
    ~TopicReader();  // closes the consumer before the handle is destroyed

    // Every record `topic` holds now (each partition up to its end at the time
    // of the call), partition by partition, in offset order. Throws KafkaError
    // for an unknown topic.
    std::vector<Record> read_all(const std::string& topic, std::chrono::milliseconds timeout);

    // The record at (topic, partition, offset), or nullopt if Kafka no longer has
    // it: below the partition's start (expired by retention, deleted), removed by
    // compaction, or never written (at or past the end).
    std::optional<Record> read_at(const std::string& topic, int partition, std::int64_t offset,
                                  std::chrono::milliseconds timeout);

    // How many partitions `topic` has. Throws KafkaError for an unknown topic.
    int partition_count(const std::string& topic, std::chrono::milliseconds timeout);

    // The partition's first offset Kafka keeps and its end (one past its last record).
    std::pair<std::int64_t, std::int64_t> watermarks(const std::string& topic, int partition,
                                                     std::chrono::milliseconds timeout);

    // The first offset of `partition` whose record's timestamp is at or after
    // `time_ms` (Kafka's offsets for times), or nullopt when no record is that late.
    std::optional<std::int64_t> offset_for_time(const std::string& topic, int partition,
                                                std::int64_t time_ms,
                                                std::chrono::milliseconds timeout);

    // The records of [from, to] (`to` included, below the partition's end) of one
    // partition, in offset order, handed to `chunk` at most `chunk_size` at a
    // time: memory is one chunk (plus librdkafka's prefetch), whatever the
    // range, for `exo audit`. Offsets with no record (compaction, transaction
    // markers) are skipped. Throws KafkaError when no record arrives for
    // `idle_timeout`, and what `chunk` throws.
    void scan(const std::string& topic, int partition, std::int64_t from, std::int64_t to,
              std::size_t chunk_size, std::chrono::milliseconds idle_timeout,
              const std::function<void(std::vector<Record>&)>& chunk);

private:
    struct Range {
        int partition;
        std::int64_t from;  // first offset to read
        std::int64_t end;   // the partition's end: one past its last record
    };
    Range range(const std::string& topic, int partition, std::chrono::milliseconds timeout);
    // Reads [from, end) of each range.
    std::vector<Record> read(const std::string& topic, const std::vector<Range>& ranges,
                             std::chrono::milliseconds timeout);
    // throw_if_kafka_error, but a security failure reported meanwhile wins: it is the cause.
    void check(rd_kafka_resp_err_t code, const std::string& doing);
    void throw_if_security_failure();
    // librdkafka's client errors, served by rd_kafka_poll in check() (this reader's thread).
    static void error_trampoline(rd_kafka_t* rk, int err, const char* reason, void* opaque);

    SecuritySettings security_;
    std::optional<KafkaError> security_failure_;  // the first one librdkafka reported
    KafkaHandle handle_;  // last: destroyed first, while what its callback writes exists
};

}  // namespace exo
