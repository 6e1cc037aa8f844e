// redis, postgres and claim: where a record's outcome is kept, and for how long.
#include "config/sections.hpp"

#include <algorithm>

#include "core/secrets.hpp"

namespace exo::config_reading {

const Keys kRedisKeys = {"host",
                         "port",
                         "username",
                         "password",
                         "db",
                         "connect_timeout_ms",
                         "command_timeout_ms",
                         "key_prefix",
                         "cluster"};
const Keys kPostgresKeys = {"uri",
                            "dedup_retention_days",
                            "connect_timeout_ms",
                            "statement_timeout_ms",
                            "lock_timeout_ms",
                            "idle_in_transaction_timeout_ms",
                            "keepalives_idle_ms",
                            "keepalives_interval_ms",
                            "keepalives_count",
                            "tcp_user_timeout_ms"};
const Keys kClaimKeys = {"store", "lease_ms", "completed_ttl_ms", "verify_duplicates"};

namespace {

const Choices<ClaimConfig::Store> kClaimStores = {{"redis", ClaimConfig::Store::redis},
                                                  {"postgres", ClaimConfig::Store::postgres}};

// libpq takes connect_timeout and the keepalive times in whole seconds: a value
// it would round is refused rather than silently changed.
void require_whole_seconds(const Reader& postgres, std::string_view key, milliseconds& value,
                           milliseconds fallback) {
    if (value.count() % 1000 == 0) return;
    const long long up = (value.count() / 1000 + 1) * 1000;
    postgres.problem(key, "libpq takes whole seconds here: write a multiple of 1000 (e.g. " +
                              std::to_string(up) + "), got " + std::to_string(value.count()));
    value = fallback;
}

// redis.cluster: the startup nodes, "host:port" each, listed once. A cluster and
// a single server cannot both be meant: host and port (and db, which a cluster
// does not have) are refused beside it, naming the key to remove.
void read_redis_cluster(const Reader& redis, RedisConfig& out) {
    if (!redis.has("cluster")) return;
    const YAML::Node node = redis.node("cluster");
    const std::vector<Item> items = redis.list("cluster");  // records a value that is not a list
    if (items.empty() && (node.IsNull() || node.IsSequence()))
        redis.problem("cluster",
                      "lists no node: give the cluster's nodes, e.g. cluster: [10.0.0.1:7000, "
                      "10.0.0.2:7000], or remove the key to use one server (host, port)");
    for (const Item& item : items) {
        auto text = scalar_text(redis.context(), item.node, item.path, item.line,
                                "a node as host:port, e.g. 10.0.0.1:7000");
        if (!text) continue;
        auto node_address = parse_host_port(*text);
        if (!node_address) {
            redis.context().add(
                item.path, item.line,
                "expected host:port (e.g. 10.0.0.1:7000 or [::1]:7000), got " + in_quotes(*text));
            continue;
        }
        if (std::find(out.cluster.begin(), out.cluster.end(), *node_address) != out.cluster.end()) {
            redis.context().add(item.path, item.line,
                                in_quotes(*text) + " is already listed: list each node once");
            continue;
        }
        out.cluster.push_back(std::move(*node_address));
    }
    for (const char* key : {"host", "port"})
        if (redis.has(key))
            redis.problem(key, "is a single server's address, but redis.cluster (line " +
                                   std::to_string(redis.line_of("cluster")) +
                                   ") names a Redis Cluster: remove redis." + key +
                                   " to use the cluster, or redis.cluster to use one server");
    if (redis.has("db"))
        redis.problem("db",
                      "selects a database, but Redis Cluster has database 0 only (redis.cluster, "
                      "line " +
                          std::to_string(redis.line_of("cluster")) + "): remove redis.db");
}

}  // namespace

RedisConfig read_redis(const Reader& redis) {
    RedisConfig out;
    redis.read("host", out.host, Text::non_empty);
    redis.read("port", out.port, kPort);
    redis.read("username", out.username);
    redis.read("password", out.password);
    // Without a password, "AUTH <username>" would be read by Redis as the default
    // user's password: a user name alone cannot be sent.
    if (!out.username.empty() && out.password.empty())
        redis.problem("username",
                      "a Redis ACL user needs redis.password too (exo sends AUTH <username> "
                      "<password>); remove redis.username to connect as the default user");
    redis.read("db", out.db, kNonNegative);
    redis.read("connect_timeout_ms", out.connect_timeout, kPositiveMs);
    redis.read("command_timeout_ms", out.command_timeout, kPositiveMs);
    redis.read("key_prefix", out.key_prefix, Text::non_empty);
    read_redis_cluster(redis, out);
    return out;
}

PostgresConfig read_postgres(const Reader& postgres) {
    PostgresConfig out;
    const PostgresConfig defaults;
    if (postgres.require("uri", "give the connection, e.g. uri: postgresql://exo@localhost/exo")) {
        postgres.read("uri", out.uri, Text::non_empty);
        // libpq would read part of such a password as the host: the connection could
        // never be the one meant, and libpq's errors would quote the rest. The
        // message does not quote the URI.
        if (has_unencoded_userinfo(out.uri))
            postgres.problem("uri",
                             "the user name or password holds an '@' or '/' that is not "
                             "percent-encoded, so libpq would read part of it as the host: write "
                             "'@' as %40 and '/' as %2F");
    }
    postgres.read_days("dedup_retention_days", out.dedup_retention, kPositiveDays);

    // libpq reads a connect_timeout of 1 s as 2 s, and 0 as "wait forever".
    postgres.read("connect_timeout_ms", out.connect_timeout, Bounds{2000, INT_MAX});
    require_whole_seconds(postgres, "connect_timeout_ms", out.connect_timeout,
                          defaults.connect_timeout);
    // PostgreSQL stores these three as int milliseconds.
    postgres.read("statement_timeout_ms", out.statement_timeout, kNonNegative);
    postgres.read("lock_timeout_ms", out.lock_timeout, kNonNegative);
    postgres.read("idle_in_transaction_timeout_ms", out.idle_in_transaction_timeout, kNonNegative);
    // Linux caps TCP_KEEPIDLE and TCP_KEEPINTVL at 32767 s and TCP_KEEPCNT at 127;
    // beyond that setsockopt fails and so would every connection.
    postgres.read("keepalives_idle_ms", out.keepalives_idle, Bounds{0, 32767000});
    require_whole_seconds(postgres, "keepalives_idle_ms", out.keepalives_idle,
                          defaults.keepalives_idle);
    postgres.read("keepalives_interval_ms", out.keepalives_interval, Bounds{0, 32767000});
    require_whole_seconds(postgres, "keepalives_interval_ms", out.keepalives_interval,
                          defaults.keepalives_interval);
    postgres.read("keepalives_count", out.keepalives_count, Bounds{0, 127});
    postgres.read("tcp_user_timeout_ms", out.tcp_user_timeout, kNonNegative);

    // The statement timer starts before the lock wait's, so with statement_timeout
    // <= lock_timeout a statement stuck on a row lock fails as "canceling
    // statement due to statement timeout" (retried as a failure) instead of as
    // 55P03 (NACKed as contention).
    if (out.statement_timeout.count() > 0 && out.lock_timeout.count() > 0 &&
        out.statement_timeout <= out.lock_timeout) {
        const std::string_view key =
            postgres.has("statement_timeout_ms") ? "statement_timeout_ms" : "lock_timeout_ms";
        postgres.problem(key,
                         "statement_timeout_ms (" + std::to_string(out.statement_timeout.count()) +
                             ") must be greater than lock_timeout_ms (" +
                             std::to_string(out.lock_timeout.count()) +
                             "), or a wait for a row lock fails as a statement timeout: raise "
                             "statement_timeout_ms, lower lock_timeout_ms, or set either to 0");
    }
    // The dead-letter step keeps its transaction open while Kafka acknowledges its
    // dead letters (at most kDeadLetterStepBudget, 30 s): a session the server
    // ends meanwhile would put them back uncounted, again and again.
    if (out.idle_in_transaction_timeout.count() > 0 &&
        out.idle_in_transaction_timeout < std::chrono::milliseconds(60000))
        postgres.problem("idle_in_transaction_timeout_ms",
                         "must be 0 or at least 60000: exo holds a transaction open while Kafka "
                         "acknowledges dead letters (up to 30 s)");
    return out;
}

ClaimConfig read_claim(const Reader& claim) {
    ClaimConfig out;
    claim.read("store", out.store, kClaimStores);
    claim.read("lease_ms", out.lease, kPositiveMs);
    claim.read("completed_ttl_ms", out.completed_ttl, kPositiveMs);
    claim.read("verify_duplicates", out.verify_duplicates, kSwitch);
    return out;
}

}  // namespace exo::config_reading
