#pragma once
// exo.yaml, parsed once (config/config_parser.hpp) into plain structs with
// defaults. Nothing else in the program reads YAML. Durations are
// std::chrono types; each field says what 0 means where 0 is allowed.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <exo/options.hpp>
#include <exo/outbox.hpp>
#include "core/host_port.hpp"
#include "core/key_source.hpp"
#include "core/record_fingerprint.hpp"
#include "core/sequence_config.hpp"

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
    // Redis 6+ ACL user: with it exo sends AUTH <username> <password>, without it
    // AUTH <password> (the default user). Not a secret; needs a password.
    std::string username;
    std::string password;  // empty: no AUTH
    int db = 0;
    milliseconds connect_timeout{2000};
    milliseconds command_timeout{2000};  // per round trip (a pipeline counts once)
    std::string key_prefix = "exo";      // claim keys: <prefix>:<group>:<key>, each escaped
    // Redis Cluster: the nodes exo asks for the slot map first (any of the
    // cluster's nodes will do; list several in case one is down). Empty: the
    // single server at host:port. With it, host, port and db are refused, and the
    // claim keys carry a hash tag ({<group>:<bucket>}, redis/claim_store.hpp).
    std::vector<HostPort> cluster;
};

enum class RedisDownPolicy { pause, postgres_only };

// Every exo PostgreSQL session is opened by pg/session.hpp with these settings.
// A parameter the uri sets itself (e.g. ?keepalives_idle=5, or options=-c
// lock_timeout=1s) wins over the value here.
struct PostgresConfig {
    std::string uri;  // libpq connection string or URI; required
    // How long dedup rows are kept. Must exceed claim.completed_ttl: the Redis
    // COMPLETED record is only a cache of this row.
    std::chrono::hours dedup_retention{24 * 30};

    // libpq connect_timeout: the longest one connection attempt (per host) may
    // take. Whole seconds, at least 2 (libpq reads 1 as 2); 0 is refused, since
    // "wait forever" lets a server that accepts TCP and never answers hold a
    // worker, and shutdown, indefinitely.
    milliseconds connect_timeout{5000};
    // Server-side limits, set on the session right after connecting (whole ms).
    // 0: exo sets nothing, so the server's (or the role's) setting applies, which
    // is "no limit" unless a DBA chose one.
    //   statement_timeout: any one statement. Must exceed lock_timeout, or a lock
    //   wait would be reported as a statement timeout.
    //   lock_timeout: a wait for a lock (a dedup or sequence row held by another
    //   transaction, live or frozen). The record gets control back with SQLSTATE
    //   55P03 and is NACKed like a Redis CONFLICT instead of stalling its worker.
    //   idle_in_transaction_timeout: how long a session may sit idle inside a
    //   transaction before the SERVER ends it. This is what releases the row
    //   locks of a frozen or partitioned exo process. Must exceed the longest
    //   pause a handler makes between two statements of its transaction (an HTTP
    //   call, say), or that handler's session is killed mid-batch.
    milliseconds statement_timeout{60000};
    milliseconds lock_timeout{5000};
    milliseconds idle_in_transaction_timeout{300000};
    // TCP keepalives and TCP_USER_TIMEOUT, so a dead server or a cut network is
    // noticed in about a minute instead of the OS's ~2 hours. libpq takes
    // keepalives_idle / keepalives_interval in whole seconds and tcp_user_timeout
    // in ms. 0: the operating system's default. Ignored on Unix-domain sockets.
    // With TCP_USER_TIMEOUT set, Linux drops the connection once data (or a
    // probe) stays unacknowledged that long, so keep it near
    // idle + interval * count (the defaults: 30 + 10 * 3 = 60 s).
    milliseconds keepalives_idle{30000};      // silence before the first probe
    milliseconds keepalives_interval{10000};  // between unanswered probes
    int keepalives_count = 3;                 // unanswered probes before the connection is dead
    milliseconds tcp_user_timeout{60000};
};

struct ClaimConfig {
    // Where a key's claim is kept (docs/design.md#two-fences). redis: the Redis
    // claim in front of the dedup row (the efficiency fence). postgres: no Redis
    // at all; the dedup row, which always was the fence, is the only one, as
    // under on_redis_down: postgres_only while Redis is down. The redis section,
    // lease_ms, completed_ttl_ms and pipeline.on_redis_down are then refused.
    enum class Store { redis, postgres };
    Store store = Store::redis;
    milliseconds lease{30000};                     // PROCESSING older than this may be taken over
    milliseconds completed_ttl{24 * 3600 * 1000};  // how long Redis answers DUPLICATE itself
    // A Redis DUPLICATE (or dead-lettered) answer is taken to PostgreSQL's dedup
    // row before the record is skipped: whoever can write under the claim prefix
    // can otherwise make exo skip records (docs/operations.md, Security). Costs a
    // dedup lookup per duplicate in the batch's transaction; off by default.
    bool verify_duplicates = false;

    bool in_redis() const { return store == Store::redis; }
};

// How a transaction's framework statements run when nothing fails
// (docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based). per_record is today's
// careful path for every transaction: a fallback switch for the set-based statements, and the
// benchmark's comparison. Batch handlers then run record by record too.
enum class FrameworkSql { set_based, per_record };

struct PipelineConfig {
    // Records a batch runner takes at once, at most: one claim call and (when
    // nothing fails) one transaction. A runner takes what is ready up to this cap, so a
    // backlog fills batches (fewer round trips and commits per record) while a
    // trickle runs in small ones after `linger` (latency).
    int batch_size = 1000;
    // Wait until this long after the longest-waiting ready record was polled for a
    // batch to fill; 0: take what is there.
    milliseconds linger{5};
    // Batches the whole process runs at once: its batch runners, each on its own
    // thread with its own PostgreSQL connection, Redis connection and lease
    // keeper, all fed by one lane scheduler (scheduling/worker_inbox.hpp), so
    // connections number `concurrency`. What lets more batches than partitions
    // run is a binding's `ordering` (key, entity): a batch takes whole lanes
    // (a partition, or one ordering key of it), a lane is in one batch at a
    // time. Not set in the file: 2, or kLaneConcurrency when a binding orders
    // by key or entity: that ordering's promise, different keys at once, needs
    // many batches at once to mean anything. (The defaults are the parallelism
    // of the two workers of earlier versions: 2 x 1, 2 x 8.)
    int concurrency = 2;
    static constexpr int kLaneConcurrency = 16;
    // Threads of the process that run handlers' before_transaction()
    // (exo/outside_transaction.hpp), shared by every runner: how many records'
    // outside work (HTTP calls, lookups) the process waits on at once. Started
    // only when a bound handler has such work.
    int outside_threads = 32;
    // Records of a partition waiting in the scheduler's queue or in a batch
    // (parked ones excluded: pausing for them could keep out the predecessor
    // they wait for): the partition is paused at this, resumed at half.
    int max_queued_per_partition = 1000;
    // The same over the whole process: every partition is paused at this (a
    // memory guard for many partitions). Not below partitions x the per-partition
    // bound in normal use: at 10,000 it throttled the 32-partition benchmark by
    // a sixth (the queues ran low between pause and resume; docs/performance.md).
    int max_in_flight = 100000;
    // The same two bounds in bytes (scheduling/record_limits.hpp: a record's key,
    // value, header names and values, 72 bytes a header and 1 KiB a record), so
    // large records or a flood of headers cannot fill memory below the record
    // counts. Paused at the bound, resumed at half, like the counts. A record
    // larger than the per-partition bound alone still goes through: a pause
    // stops fetching, never the records already queued.
    std::size_t max_queued_bytes_per_partition = std::size_t{16} * 1024 * 1024;
    std::size_t max_in_flight_bytes = std::size_t{256} * 1024 * 1024;
    // Headers a record may have (Kafka sets no bound; each costs its name, value
    // and 72 bytes in memory): a record with more is a dead letter, its handler
    // never runs, its headers are dropped at once (record_limits.hpp).
    int max_headers_per_record = 1000;
    // Records of a partition parked on a strict-sequence gap (waiting for a
    // predecessor, outside the bounds above: pausing for them could keep the
    // predecessor out), and their bytes as the byte bounds count them. At
    // either bound a record meeting a *new* gap is dead-lettered at once
    // without a dedup row (as a gap timeout; `exo dlq replay` applies it later,
    // once), instead of parked; records already parked keep their place
    // (scheduling/gap_parking.hpp).
    int max_parked_per_partition = 1000;
    std::size_t max_parked_bytes_per_partition = std::size_t{16} * 1024 * 1024;
    milliseconds shutdown_timeout{10000};  // drain deadline on SIGTERM and on revoke
    milliseconds retry_backoff_initial{100};
    milliseconds retry_backoff_max{10000};
    RedisDownPolicy on_redis_down = RedisDownPolicy::pause;
    // Not read from exo.yaml (refused there): a seam for the benchmark's
    // per-record comparison and for tests of the per-record path.
    FrameworkSql framework_sql = FrameworkSql::set_based;
};

// text: "[time] [logger] [level] message [topic[partition]@offset key=...]", for people.
// json: one JSON object per line (time, level, logger, message, and topic, partition,
// offset and key when the line concerns a record), for log collectors.
enum class LogFormat { text, json };

struct LoggingConfig {
    std::string level = "info";  // trace, debug, info, warn, error, critical, off
    LogFormat format = LogFormat::text;
};

// The HTTP endpoint for health, readiness and metrics. Off unless
// observability.listen is given.
struct ObservabilityConfig {
    struct Listen {
        std::string host;  // as written: a name, an IPv4 address, or an IPv6 one without brackets
        int port = 0;      // 1-65535
    };
    std::optional<Listen> listen;  // nullopt: no endpoint

    bool enabled() const { return listen.has_value(); }
};

// The outbox relay (docs/outbox.md): publishes the records handlers emit. Every
// daemon with it enabled shares the work; rows are published by one at a time.
struct OutboxConfig {
    bool enabled = true;  // run a relay in this daemon
    // Rows claimed, produced and marked per round, at most (max_round_bytes bounds
    // their memory). 2,000: a relay at 500 fell behind a pipeline emitting one row
    // per record (docs/performance.md); each round costs a few statements.
    int batch_size = 2000;
    // Bytes of keys, values and headers a round reads and produces, at most
    // (a round always takes at least one row, however large).
    std::size_t max_round_bytes = std::size_t{16} * 1024 * 1024;
    // The topics handlers emit to, as far as the operator declares them: at start-up
    // each must exist (the daemon waits, not ready, until it does) and its
    // max.message.bytes is asked of the brokers for emit()'s check. An emit to a
    // topic not listed here is checked against the producer's limit only.
    std::vector<std::string> topics;
    // Not a key of its own: the producer's limit is kafka.properties'
    // message.max.bytes, else librdkafka's default; the topics' limits are
    // learned at start-up (outbox.topics). An emit over its topic's limit is refused.
    EmitLimits emit_limits;
    // How long the relay sleeps at most between rounds that found nothing: rows
    // another daemon committed wait this long at worst (a commit of this daemon
    // that emitted, or a NOTIFY, wakes it at once).
    milliseconds poll_interval{1000};
    // How long sent rows are kept (for inspection); 0: deleted once published.
    std::chrono::hours retention{24 * 7};
};

// Retention pruning (docs/design.md#retention): how fast expired rows go.
// How long rows are kept is the tables' own setting (postgres.dedup_retention,
// outbox.retention).
struct RetentionConfig {
    int chunk_rows = 5000;  // rows deleted per transaction (the longest any row lock is held)
    // The pruner deletes at most this many rows per second over every table, so
    // clearing a backlog never competes with the pipeline in a burst (measured:
    // 25,000 cost the pipeline nothing measurable, 50,000 a quarter of its
    // rate, docs/performance.md). Must exceed the rows the pipeline writes per
    // second (dedup rows, plus outbox rows when handlers emit), or retention
    // falls behind; 0: no cap.
    int max_rows_per_second = 25000;
    // The pass is repeated chunk after chunk while a table has expired rows;
    // once every table is caught up the pruner sleeps this long.
    milliseconds interval{60000};
};

// Which records of a binding's partition must run one after another
// (docs/design.md#ordering-and-concurrency). partition: all of them, in offset order.
// key: those with the same Kafka record key (records without a key share one
// lane per partition); entity: those with the same sequence entity (the
// binding's `sequence:`; a record whose entity cannot be read shares the
// partition's no-entity lane). Different lanes of a partition run
// concurrently; a lane's records in offset order, one batch at a time.
enum class Ordering { partition, key, entity };

struct BindingConfig {
    std::string topic;
    std::string handler;
    KeySource key;
    std::optional<SequenceConfig> sequence;
    Ordering ordering = Ordering::partition;
    int max_attempts = 5;           // handler tries before dead-lettering a retryable failure
    std::string dead_letter_topic;  // default "<topic>.dlq"
    // A later copy of a key whose payload differs from the applied one's
    // (core/record_fingerprint.hpp): dead-lettered (no dedup row), logged as a
    // duplicate, or a plain duplicate. A byte-identical copy is always a duplicate.
    KeyReusePolicy on_key_reuse = KeyReusePolicy::dead_letter;
    int yaml_line = 0;  // where the binding was declared, for later error messages
    // `options:`, handed to the handler's factory as they are: their keys are the
    // handler's, so only their shape (scalars) is checked here; the handler
    // converts and checks values itself. Empty when the binding has none.
    HandlerOptions options;
};

struct Config {
    KafkaConfig kafka;
    RedisConfig redis;
    PostgresConfig postgres;
    ClaimConfig claim;
    PipelineConfig pipeline;
    LoggingConfig logging;
    ObservabilityConfig observability;
    OutboxConfig outbox;
    RetentionConfig retention;
    std::vector<BindingConfig> bindings;  // at least one; topics are unique

    // The bound topics, in binding order: what the daemon subscribes to.
    std::vector<std::string> binding_topics() const {
        std::vector<std::string> topics;
        for (const auto& b : bindings) topics.push_back(b.topic);
        return topics;
    }
};

}  // namespace exo
