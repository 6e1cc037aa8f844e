#pragma once
// exo.yaml, parsed once (config/config_parser.cpp) into plain structs with
// defaults. Nothing else in the program reads YAML. Durations are
// std::chrono types; each field says what 0 means where 0 is allowed.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace exo {

using std::chrono::milliseconds;

// An in-process librdkafka mock cluster (rdkafka_mock.h) instead of real brokers:
// for the demo and tests only; it keeps no data across restarts.
struct MockKafkaConfig {
    int brokers = 1;
    struct TopicSpec {
        std::string name;
        int partitions = 1;
    };
    std::vector<TopicSpec> topics;  // created at start-up
    std::string bootstrap_file;     // if set, the bootstrap address is written here
};

struct KafkaConfig {
    std::string bootstrap_servers;        // required unless `mock` is set
    std::optional<MockKafkaConfig> mock;  // exactly one of bootstrap_servers / mock
    std::string group_id;                 // required
    // Extra librdkafka properties, passed through verbatim (e.g. session.timeout.ms).
    // exo owns enable.auto.commit, enable.auto.offset.store and group.id: setting them
    // here is a config error.
    std::map<std::string, std::string> properties;
    milliseconds commit_interval{1000};  // how often finished offsets are committed
};

struct RedisConfig {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string password;  // empty: no AUTH
    int db = 0;
    milliseconds connect_timeout{2000};
    milliseconds command_timeout{2000};  // per round trip (a pipeline counts once)
    std::string key_prefix = "exo";      // claim keys are <prefix>:<group>:<key>
};

enum class RedisDownPolicy { pause, postgres_only };

struct PostgresConfig {
    std::string uri;  // libpq connection string or URI; required
    // How long dedup rows are kept. Must exceed claim.completed_ttl: the Redis
    // COMPLETED record is only a cache of this row.
    std::chrono::hours dedup_retention{24 * 30};
};

struct ClaimConfig {
    milliseconds lease{30000};                     // PROCESSING older than this may be taken over
    milliseconds completed_ttl{24 * 3600 * 1000};  // how long Redis answers DUPLICATE itself
};

struct PipelineConfig {
    int workers = 2;         // threads, each with its own Redis and PostgreSQL connection
    int batch_size = 100;    // records per claim pipeline and per transaction
    milliseconds linger{5};  // wait this long for a batch to fill; 0: take what is there
    int max_queued_per_partition = 1000;   // the partition is paused above this
    milliseconds shutdown_timeout{10000};  // drain deadline on SIGTERM and on revoke
    milliseconds retry_backoff_initial{100};
    milliseconds retry_backoff_max{10000};
    RedisDownPolicy on_redis_down = RedisDownPolicy::pause;
};

struct LoggingConfig {
    std::string level = "info";  // trace, debug, info, warn, error, critical, off
};

enum class KeySourceKind { header, json, coordinates };

struct KeySource {
    KeySourceKind kind = KeySourceKind::coordinates;
    std::string name;  // the header name (header) or JSON pointer (json); empty for coordinates
};

enum class SequenceMode { latest, strict };

struct SequenceConfig {
    std::string entity_pointer;  // JSON pointer to the entity id (string or integer)
    std::string value_pointer;   // JSON pointer to the sequence number (integer)
    SequenceMode mode = SequenceMode::latest;
    milliseconds gap_timeout{60000};  // strict mode: how long a gap is held before dead-lettering
};

struct BindingConfig {
    std::string topic;
    std::string handler;
    KeySource key;
    std::optional<SequenceConfig> sequence;
    int max_attempts = 5;           // handler tries before dead-lettering a retryable failure
    std::string dead_letter_topic;  // default "<topic>.dlq"
    int yaml_line = 0;              // where the binding was declared, for later error messages
};

struct Config {
    KafkaConfig kafka;
    RedisConfig redis;
    PostgresConfig postgres;
    ClaimConfig claim;
    PipelineConfig pipeline;
    LoggingConfig logging;
    std::vector<BindingConfig> bindings;  // at least one; topics are unique
};

}  // namespace exo
