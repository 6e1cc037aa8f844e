// effective_config_yaml (config_printer.hpp): each section in the order and with
// the key names of config_parser.cpp's readers, so the output parses back.
#include "config/config_printer.hpp"

#include <yaml-cpp/yaml.h>

#include "core/secrets.hpp"

namespace exo {
namespace {

// Values are read through ${ENV} expansion: a literal "${" must be written "$${".
std::string literal(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') out += '$';
        out += text[i];
    }
    return out;
}

std::string secret(std::string_view value) {
    // An empty password means "no AUTH": nothing to hide, and masking it would
    // change its meaning.
    return value.empty() ? std::string() : std::string(kSecretMask);
}

class Printer {
public:
    Printer() { out_ << YAML::BeginMap; }

    std::string finish() {
        out_ << YAML::EndMap;
        return std::string(out_.c_str()) + "\n";
    }

    void kafka(const KafkaConfig& k) {
        begin("kafka");
        if (k.mock) {
            begin("mock");
            number("brokers", k.mock->brokers);
            out_ << YAML::Key << "topics" << YAML::Value << YAML::BeginSeq;
            for (const auto& t : k.mock->topics)
                out_ << YAML::DoubleQuoted << literal(t.name + ":" + std::to_string(t.partitions));
            out_ << YAML::EndSeq;
            if (!k.mock->bootstrap_file.empty()) text("bootstrap_file", k.mock->bootstrap_file);
            end();
        } else {
            text("bootstrap_servers", k.bootstrap_servers);
        }
        text("group_id", k.group_id);
        ms("commit_interval_ms", k.commit_interval);
        begin("properties", k.properties.empty());
        for (const auto& [key, value] : k.properties)
            text(key, is_secret_key(key) ? secret(value) : mask_uri(value));
        end();
        end();
    }

    void redis(const RedisConfig& r) {
        begin("redis");
        if (r.cluster.empty()) {
            text("host", r.host);
            number("port", r.port);
        } else {
            out_ << YAML::Key << "cluster" << YAML::Value << YAML::BeginSeq;
            for (const auto& node : r.cluster) {
                const bool ipv6 = node.host.find(':') != std::string::npos;
                out_ << YAML::DoubleQuoted
                     << literal((ipv6 ? "[" + node.host + "]" : node.host) + ":" +
                                std::to_string(node.port));
            }
            out_ << YAML::EndSeq;
        }
        text("username", r.username);
        text("password", secret(r.password));
        if (r.cluster.empty()) number("db", r.db);
        ms("connect_timeout_ms", r.connect_timeout);
        ms("command_timeout_ms", r.command_timeout);
        text("key_prefix", r.key_prefix);
        end();
    }

    void postgres(const PostgresConfig& p) {
        begin("postgres");
        text("uri", mask_postgres_uri(p.uri));
        number("dedup_retention_days", p.dedup_retention.count() / 24);
        ms("connect_timeout_ms", p.connect_timeout);
        ms("statement_timeout_ms", p.statement_timeout);
        ms("lock_timeout_ms", p.lock_timeout);
        ms("idle_in_transaction_timeout_ms", p.idle_in_transaction_timeout);
        ms("keepalives_idle_ms", p.keepalives_idle);
        ms("keepalives_interval_ms", p.keepalives_interval);
        number("keepalives_count", p.keepalives_count);
        ms("tcp_user_timeout_ms", p.tcp_user_timeout);
        end();
    }

    // With claim.store: postgres the Redis-only keys are left out: the parser
    // refuses them there (they would configure nothing).
    void claim(const ClaimConfig& c) {
        begin("claim");
        text("store", c.in_redis() ? "redis" : "postgres");
        if (c.in_redis()) {
            ms("lease_ms", c.lease);
            ms("completed_ttl_ms", c.completed_ttl);
            out_ << YAML::Key << "verify_duplicates" << YAML::Value << c.verify_duplicates;
        }
        end();
    }

    void pipeline(const PipelineConfig& p, const ClaimConfig& c) {
        begin("pipeline");
        number("workers", p.workers);
        number("batch_size", p.batch_size);
        ms("linger_ms", p.linger);
        number("concurrency", p.concurrency);
        number("outside_threads", p.outside_threads);
        number("max_queued_per_partition", p.max_queued_per_partition);
        number("max_in_flight", p.max_in_flight);
        number("max_queued_bytes_per_partition", p.max_queued_bytes_per_partition);
        number("max_in_flight_bytes", p.max_in_flight_bytes);
        number("max_headers_per_record", p.max_headers_per_record);
        number("max_parked_per_partition", p.max_parked_per_partition);
        number("max_parked_bytes_per_partition", p.max_parked_bytes_per_partition);
        ms("shutdown_timeout_ms", p.shutdown_timeout);
        ms("retry_backoff_initial_ms", p.retry_backoff_initial);
        ms("retry_backoff_max_ms", p.retry_backoff_max);
        if (c.in_redis())
            text("on_redis_down",
                 p.on_redis_down == RedisDownPolicy::pause ? "pause" : "postgres_only");
        end();
    }

    void logging(const LoggingConfig& l) {
        begin("logging");
        text("level", l.level);
        text("format", l.format == LogFormat::json ? "json" : "text");
        end();
    }

    void observability(const ObservabilityConfig& o) {
        // No listen key: no endpoint ("observability: {}").
        begin("observability", !o.listen);
        if (o.listen) {
            const bool ipv6 = o.listen->host.find(':') != std::string::npos;
            text("listen", (ipv6 ? "[" + o.listen->host + "]" : o.listen->host) + ":" +
                               std::to_string(o.listen->port));
        }
        end();
    }

    void outbox(const OutboxConfig& o) {
        begin("outbox");
        out_ << YAML::Key << "enabled" << YAML::Value << o.enabled;
        out_ << YAML::Key << "topics" << YAML::Value << YAML::BeginSeq;
        for (const auto& t : o.topics) out_ << YAML::DoubleQuoted << literal(t);
        out_ << YAML::EndSeq;
        number("batch_size", o.batch_size);
        number("max_round_bytes", static_cast<int>(o.max_round_bytes));
        ms("poll_interval_ms", o.poll_interval);
        number("retention_days", static_cast<int>(o.retention.count() / 24));
        end();
    }

    void retention(const RetentionConfig& r) {
        begin("retention");
        number("chunk_rows", r.chunk_rows);
        number("max_rows_per_second", r.max_rows_per_second);
        ms("interval_ms", r.interval);
        end();
    }

    void bindings(const std::vector<BindingConfig>& bindings) {
        out_ << YAML::Key << "bindings" << YAML::Value << YAML::BeginSeq;
        for (const auto& b : bindings) binding(b);
        out_ << YAML::EndSeq;
    }

private:
    void binding(const BindingConfig& b) {
        out_ << YAML::BeginMap;
        text("topic", b.topic);
        text("handler", b.handler);
        if (b.key.kind == KeySourceKind::coordinates) {
            text("key", "coordinates");
        } else if (b.key.kind == KeySourceKind::hash) {
            const HashKeySpec& h = b.key.hash;
            begin("key");
            begin("hash", h.fields.empty() && h.exclude.empty() && !h.prefix_topic);
            if (!h.fields.empty()) texts("fields", h.fields);
            if (!h.exclude.empty()) texts("exclude", h.exclude);
            if (h.prefix_topic) out_ << YAML::Key << "prefix_topic" << YAML::Value << true;
            end();
            end();
        } else {
            begin("key");
            text(b.key.kind == KeySourceKind::header ? "header" : "json", b.key.name);
            end();
        }
        if (b.sequence) {
            begin("sequence");
            text("entity", b.sequence->entity_pointer);
            text("value", b.sequence->value_pointer);
            text("mode", b.sequence->mode == SequenceMode::strict ? "strict" : "latest");
            text("scope", b.sequence->scope == SequenceScope::group ? "group" : "shared");
            ms("gap_timeout_ms", b.sequence->gap_timeout);
            end();
        }
        text("ordering", b.ordering == Ordering::partition ? "partition"
                         : b.ordering == Ordering::key     ? "key"
                                                           : "entity");
        number("max_attempts", b.max_attempts);
        text("dead_letter_topic", b.dead_letter_topic);
        text("on_key_reuse", b.on_key_reuse == KeyReusePolicy::dead_letter ? "dead_letter"
                             : b.on_key_reuse == KeyReusePolicy::log       ? "log"
                                                                           : "ignore");
        begin("options", b.options.empty());
        for (const auto& key : b.options.keys()) {
            const std::string value = b.options.string(key);
            text(key, is_secret_key(key) ? secret(value) : mask_uri(value));
        }
        end();
        out_ << YAML::EndMap;
    }

    // An empty mapping reads best as "key: {}".
    void begin(std::string_view key, bool empty = false) {
        out_ << YAML::Key << std::string(key) << YAML::Value;
        if (empty) out_ << YAML::Flow;
        out_ << YAML::BeginMap;
    }
    void end() { out_ << YAML::EndMap; }

    // Always quoted: a value such as "true", "123" or "*****" stays text, and the
    // output shows which values are text.
    void text(std::string_view key, std::string_view value) {
        out_ << YAML::Key << std::string(key) << YAML::Value << YAML::DoubleQuoted
             << literal(value);
    }
    void texts(std::string_view key, const std::vector<std::string>& values) {
        out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& v : values) out_ << YAML::DoubleQuoted << literal(v);
        out_ << YAML::EndSeq;
    }
    void number(std::string_view key, long long value) {
        out_ << YAML::Key << std::string(key) << YAML::Value << value;
    }
    void ms(std::string_view key, std::chrono::milliseconds value) { number(key, value.count()); }

    YAML::Emitter out_;
};

}  // namespace

std::string effective_config_yaml(const Config& config) {
    Printer p;
    p.kafka(config.kafka);
    if (config.claim.in_redis()) p.redis(config.redis);
    p.postgres(config.postgres);
    p.claim(config.claim);
    p.pipeline(config.pipeline, config.claim);
    p.logging(config.logging);
    p.observability(config.observability);
    p.outbox(config.outbox);
    p.retention(config.retention);
    p.bindings(config.bindings);
    return p.finish();
}

}  // namespace exo
