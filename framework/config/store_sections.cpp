// redis, postgres and claim: where a record's outcome is kept, and for how long.
#include <algorithm>

#include "config/sections.hpp"
#include "core/secrets.hpp"

namespace exo::config_reading {

const Choices<ClaimConfig::Store> kClaimStores = {{"redis", ClaimConfig::Store::redis},
                                                  {"postgres", ClaimConfig::Store::postgres}};

}  // namespace exo::config_reading

namespace exo::config_schema {
namespace {

using config_reading::Item;
using config_reading::kNonNegative;
using config_reading::kPort;
using config_reading::kPositiveDays;
using config_reading::kPositiveMs;
using R = RedisConfig;
using PG = PostgresConfig;
using C = ClaimConfig;

// libpq takes connect_timeout and the keepalive times in whole seconds: a value
// it would round is refused rather than silently changed.
template <milliseconds PostgresConfig::*member>
std::optional<std::string> whole_seconds(const PostgresConfig& p) {
    const milliseconds value = p.*member;
    if (value.count() % 1000 == 0) return std::nullopt;
    const long long up = (value.count() / 1000 + 1) * 1000;
    return "libpq takes whole seconds here: write a multiple of 1000 (e.g. " + std::to_string(up) +
           "), got " + std::to_string(value.count());
}

// redis.cluster: the startup nodes, "host:port" each, listed once.
void read_cluster(const Reader& redis, RedisConfig& out) {
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
}

void print_cluster(YAML::Emitter& e, const RedisConfig& r, const Config&) {
    e << YAML::Key << "cluster" << YAML::Value << YAML::BeginSeq;
    for (const auto& node : r.cluster) {
        const bool ipv6 = node.host.find(':') != std::string::npos;
        e << YAML::DoubleQuoted
          << yaml_writer::literal((ipv6 ? "[" + node.host + "]" : node.host) + ":" +
                                  std::to_string(node.port));
    }
    e << YAML::EndSeq;
}

bool single_server(const Config&, const RedisConfig& r) {
    return r.cluster.empty();
}

void validate_redis(const Reader& redis, RedisConfig& out) {
    // Without a password, "AUTH <username>" would be read by Redis as the default
    // user's password: a user name alone cannot be sent.
    if (!out.username.empty() && out.password.empty())
        redis.problem("username",
                      "a Redis ACL user needs redis.password too (exo sends AUTH <username> "
                      "<password>); remove redis.username to connect as the default user");
    // A cluster and a single server cannot both be meant: host and port (and db,
    // which a cluster does not have) are refused beside it, naming the key to remove.
    if (!redis.has("cluster")) return;
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

void validate_postgres(const Reader& postgres, PostgresConfig& out) {
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
}

// libpq would read part of such a password as the host: the connection could
// never be the one meant, and libpq's errors would quote the rest. The message
// does not quote the URI.
std::optional<std::string> encoded_userinfo(const PostgresConfig& p) {
    if (!has_unencoded_userinfo(p.uri)) return std::nullopt;
    return "the user name or password holds an '@' or '/' that is not percent-encoded, so libpq "
           "would read part of it as the host: write '@' as %40 and '/' as %2F";
}

// The dead-letter step keeps its transaction open while Kafka acknowledges its
// dead letters (at most kDeadLetterStepBudget, 30 s): a session the server ends
// meanwhile would put them back uncounted, again and again.
std::optional<std::string> idle_long_enough(const PostgresConfig& p) {
    if (p.idle_in_transaction_timeout.count() == 0 ||
        p.idle_in_transaction_timeout >= milliseconds(60000))
        return std::nullopt;
    return "must be 0 or at least 60000: exo holds a transaction open while Kafka acknowledges "
           "dead letters (up to 30 s)";
}

// Linux caps TCP_KEEPIDLE and TCP_KEEPINTVL at 32767 s and TCP_KEEPCNT at 127;
// beyond that setsockopt fails and so would every connection.
constexpr Bounds kKeepaliveMs{0, 32767000};

bool redis_claims(const Config&, const ClaimConfig& c) {
    return c.in_redis();
}

}  // namespace

// cluster after host and port: with it they are not printed, so the section
// starts with the nodes, and the docs read single server, then cluster.
const Section<RedisConfig>& redis_section() {
    static const Section<RedisConfig> section(
        "redis",
        {
            text(
                "host", &R::host, Text::non_empty,
                R"md(one Redis server (a primary, with or without replicas); for Redis Cluster use `redis.cluster` instead)md")
                .printed_if(single_server),
            number("port", &R::port, kPort, R"md(the port of `redis.host`)md")
                .printed_if(single_server),
            custom<R>(
                "cluster", read_cluster, print_cluster, "—",
                R"md(Redis Cluster startup nodes, `[host:port, ...]` (any nodes of the cluster; list several so one being down does not stop a start). Instead of `host`/`port`; refused beside them and beside `db` (a cluster has database 0 only), naming the line. Claim keys then carry a hash tag, `<prefix>:{<group>:<bucket>}:<key>` (docs/design.md, "Redis Cluster"))md")
                .printed_if([](const Config&, const R& r) { return !r.cluster.empty(); }),
            text(
                "username", &R::username, Text::any,
                R"md(Redis 6+ ACL user: with it exo sends `AUTH <username> <password>`, without it `AUTH <password>` (the default user). Needs `redis.password`. Used by every Redis connection exo opens (the batch runners, the lease renewer, `exo inspect`, `exo dlq`). Not a secret: printed as written. Give the user only the claim keys: `ACL SETUSER exo on >PASSWORD ~exo:* &* +@all` (`~<key_prefix>:*`))md"),
            text(
                "password", &R::password, Text::any,
                R"md(`AUTH` if set. Secret: masked in `check-config --print`, and by value in logs and errors when 8 characters or longer (`check-config` warns when shorter))md",
                yaml_writer::secret),
            number("db", &R::db, kNonNegative,
                   R"md(the database exo `SELECT`s; refused beside `redis.cluster`)md")
                .printed_if(single_server),
            ms("connect_timeout_ms", &R::connect_timeout, kPositiveMs, R"md(per connect)md"),
            ms("command_timeout_ms", &R::command_timeout, kPositiveMs,
               R"md(per round trip (a pipeline counts once))md"),
            text(
                "key_prefix", &R::key_prefix, Text::non_empty,
                R"md(claims are `<prefix>:<group_id>:<key>`, each part with `%` and `:` percent-encoded so no two (group, key) pairs share a claim)md"),
        },
        validate_redis,
        // With claim.store: postgres the parser refuses the section (config_parser.cpp).
        [](const Config& c) { return c.claim.in_redis(); });
    return section;
}

const Section<PostgresConfig>& postgres_section() {
    static const Section<PostgresConfig> section(
        "postgres",
        {
            text(
                "uri", &PG::uri, Text::non_empty,
                R"md(libpq connection string or URI. A parameter set here (e.g. `?keepalives_idle=5`, or `options=-c lock_timeout=1s`) wins over the keys below. Percent-encode reserved characters of the user name and password (`@` as `%40`, `/` as `%2F`): exo refuses a URI whose user-info holds them unencoded. Its password is masked in `check-config --print`)md",
                mask_postgres_uri)
                .required("give the connection, e.g. uri: postgresql://exo@localhost/exo")
                .checked(encoded_userinfo),
            days(
                "dedup_retention_days", &PG::dedup_retention, kPositiveDays,
                R"md(this group's dedup rows, strict-sequence gap sightings and finished replay tickets older than this are pruned (`retention` below); must exceed `claim.completed_ttl_ms` (with Redis claims))md"),
            // libpq reads a connect_timeout of 1 s as 2 s, and 0 as "wait forever".
            ms("connect_timeout_ms", &PG::connect_timeout, Bounds{2000, INT_MAX},
               R"md(longest one connection attempt may take (libpq `connect_timeout`); whole seconds, at least 2000; 0 (wait forever) is refused)md")
                .checked(whole_seconds<&PG::connect_timeout>),
            // PostgreSQL stores these three as int milliseconds.
            ms("statement_timeout_ms", &PG::statement_timeout, kNonNegative,
               R"md(server-side limit on any one statement; must exceed `lock_timeout_ms`; 0: exo sets none (the server's or role's setting applies))md"),
            ms("lock_timeout_ms", &PG::lock_timeout, kNonNegative,
               R"md(longest wait for a row lock (a dedup or sequence row held by another transaction, live or frozen); the record is then NACKed like a Redis `CONFLICT`; 0: exo sets none)md"),
            ms("idle_in_transaction_timeout_ms", &PG::idle_in_transaction_timeout, kNonNegative,
               R"md(the server ends a session idle this long inside a transaction, which releases its row locks (a frozen exo process); must exceed the longest pause a handler makes between statements of its transaction (an HTTP call, say), and be at least 60000 (a dead-letter step holds its transaction open while Kafka acknowledges, up to 30 s); 0: exo sets none)md")
                .checked(idle_long_enough),
            ms("keepalives_idle_ms", &PG::keepalives_idle, kKeepaliveMs,
               R"md(TCP silence before the first keepalive probe; whole seconds; 0: OS default)md")
                .checked(whole_seconds<&PG::keepalives_idle>),
            ms("keepalives_interval_ms", &PG::keepalives_interval, kKeepaliveMs,
               R"md(time between unanswered keepalive probes; whole seconds; 0: OS default)md")
                .checked(whole_seconds<&PG::keepalives_interval>),
            number("keepalives_count", &PG::keepalives_count, Bounds{0, 127},
                   R"md(unanswered probes before the connection counts as dead; 0: OS default)md"),
            ms("tcp_user_timeout_ms", &PG::tcp_user_timeout, kNonNegative,
               R"md(Linux `TCP_USER_TIMEOUT`: drop the connection when sent data stays unacknowledged this long; 0: OS default)md"),
        },
        validate_postgres);
    return section;
}

// With claim.store: postgres the Redis-only keys are not printed: the parser
// refuses them there (they would configure nothing; config_parser.cpp).
const Section<ClaimConfig>& claim_section() {
    static const Section<ClaimConfig> section(
        "claim",
        {
            choice(
                "store", &C::store, config_reading::kClaimStores,
                R"md(where claims are kept. `redis`: a Redis claim per key in front of the dedup row (docs/design.md#two-fences and docs/design.md#redis-claim-record-and-scripts). `postgres`: no Redis at all, the dedup row in the transaction the only fence, as `on_redis_down: postgres_only` while Redis is down; the guarantee is the same, given up are duplicates answered without PostgreSQL, the guard that keeps two copies of a key off PostgreSQL at once (they wait on the dedup row's lock instead, and are NACKed after `postgres.lock_timeout_ms`), and claims to `exo inspect` (docs/guarantee.md, "Without Redis"). The `redis` section, `claim.lease_ms`, `claim.completed_ttl_ms`, `claim.verify_duplicates` and `pipeline.on_redis_down` are then refused, each naming its line)md"),
            ms("lease_ms", &C::lease, kPositiveMs,
               R"md(a `PROCESSING` claim older than this may be taken over; renewed every third of it while a handler runs)md")
                .printed_if(redis_claims),
            ms("completed_ttl_ms", &C::completed_ttl, kPositiveMs,
               R"md(how long Redis answers `DUPLICATE` by itself)md")
                .printed_if(redis_claims),
            toggle(
                "verify_duplicates", &C::verify_duplicates,
                R"md(take every Redis `DUPLICATE` answer to the dedup row before skipping the record, so a writer to Redis cannot make exo skip records (docs/operations.md, "Security: what Redis write access means"); costs a dedup lookup per duplicate. Refused with `claim.store: postgres`)md")
                .printed_if(redis_claims),
        });
    return section;
}

}  // namespace exo::config_schema
