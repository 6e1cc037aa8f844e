#include "bench_world.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <pqxx/pqxx>
#include <stdexcept>

#include "kafka/producer.hpp"
#include "kafka/rdkafka_handles.hpp"
#include "ledger_migrations.hpp"
#include "pg/migrations.hpp"
#include "redis/redis_connection.hpp"
#include "topic_admin.hpp"

namespace exo::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The payment JSON plus a "note" that brings it to 100-200 bytes (the ledger
// handler ignores unknown fields). The length depends on the event id only, so
// a re-sent event has the same payload as the original.
std::string padded_json(const Payment& p) {
    std::string base = p.json();
    std::size_t target = 100 + std::hash<std::string>{}(p.event_id) % 101;
    constexpr std::size_t kFieldOverhead = sizeof(",\"note\":\"\"") - 1;
    std::size_t pad =
        target > base.size() + kFieldOverhead ? target - base.size() - kFieldOverhead : 0;
    base.pop_back();  // the closing brace
    return base + ",\"note\":\"" + std::string(pad, 'x') + "\"}";
}

// (low, high) watermark per partition: a low above 0 means the mock cluster's 5 MiB per
// partition dropped records; high - low is what the partition holds.
std::vector<std::pair<std::int64_t, std::int64_t>> watermarks(const std::string& bootstrap,
                                                              const std::string& topic,
                                                              int partitions) {
    char err[512];
    KafkaConf conf(rd_kafka_conf_new());
    rd_kafka_conf_set(conf.get(), "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf.get(), "log_level", "3", err, sizeof err);
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), err, sizeof err));
    if (!rk) throw std::runtime_error(std::string("cannot create a Kafka client: ") + err);
    conf.release();
    std::vector<std::pair<std::int64_t, std::int64_t>> marks;
    for (int p = 0; p < partitions; ++p) {
        std::int64_t low = 0, high = 0;
        auto e = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &low, &high, 10000);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            throw std::runtime_error("watermarks of " + topic + ": " + rd_kafka_err2str(e));
        marks.emplace_back(low, high);
    }
    return marks;
}

std::string sanitize(std::string s) {
    for (auto& c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '_';
    return s;
}

}  // namespace

KeySource ledger_key_source() {
    return {KeySourceKind::json, "/eventId"};
}

SequenceConfig ledger_sequence_config() {
    return {"/accountId", "/sequenceId", SequenceMode::strict, std::chrono::milliseconds(60000)};
}

std::string with_search_path(const std::string& uri, const std::string& schema) {
    return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
           schema;
}

BenchWorld::BenchWorld(const BenchOptions& options, int run) : options_(options), run_(run) {
    if (options.bootstrap.empty()) {
        mock_.emplace(1);
        bootstrap_ = mock_->bootstrap_servers();
    } else {
        bootstrap_ = options.bootstrap;
    }
}

BenchWorld::~BenchWorld() {
    if (real_kafka()) delete_topics(bootstrap_, created_);
}

TopicWorkload BenchWorld::make_workload(const std::string& prefix, int count) {
    TopicWorkload t;
    t.topic = fmt::format("bench_{}_r{}_{}", ::getpid(), run_, prefix);
    WorkloadOptions wo;
    wo.count = count;
    wo.accounts = options_.accounts;
    wo.duplicate_ratio = options_.duplicate_ratio;
    wo.partitions = options_.partitions;
    wo.seed = options_.seed + static_cast<std::uint64_t>(run_);
    wo.event_prefix = prefix;
    t.workload = generate_payments(wo);
    t.payloads.reserve(t.workload.messages.size());
    std::size_t total = 0;
    t.payload_bytes_min = SIZE_MAX;
    for (const auto& m : t.workload.messages) {
        t.payloads.push_back(padded_json(m.payment));
        auto n = t.payloads.back().size();
        total += n;
        t.payload_bytes_min = std::min(t.payload_bytes_min, n);
        t.payload_bytes_max = std::max(t.payload_bytes_max, n);
    }
    t.payload_bytes_avg =
        t.payloads.empty() ? 0 : static_cast<double>(total) / static_cast<double>(t.size());
    create_topic(t.topic, options_.partitions);
    create_topic(t.topic + ".dlq", 1);
    return t;
}

double BenchWorld::produce_all(const TopicWorkload& w) {
    auto start = Clock::now();
    {
        KafkaProducer producer(ProducerOptions{bootstrap(), {{"linger.ms", "20"}}});
        for (std::size_t i = 0; i < w.size(); ++i) {
            const auto& m = w.workload.messages[i];
            producer.produce({w.topic, m.partition, m.payment.account_id, w.payloads[i], {}});
        }
        producer.flush(std::chrono::seconds(120));
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    auto marks = watermarks(bootstrap(), w.topic, options_.partitions);
    for (std::size_t p = 0; p < marks.size(); ++p)
        if (marks[p].first != 0)
            throw std::runtime_error(fmt::format(
                "the mock cluster dropped the first {} records of {}[{}] (it keeps at most 5 MiB "
                "per partition): use more --partitions or fewer --records",
                marks[p].first, w.topic, p));
    return seconds;
}

void BenchWorld::create_topic(const std::string& topic, int partitions) {
    const int n = partitions > 0 ? partitions : options_.partitions;
    if (mock_) {
        mock_->create_topic(topic, n);
        return;
    }
    create_topics(bootstrap_, {{topic, n}});
    created_.push_back(topic);
}

std::vector<std::int64_t> BenchWorld::records_per_partition(const std::string& topic,
                                                            int partitions) const {
    std::vector<std::int64_t> counts;
    for (const auto& [low, high] : watermarks(bootstrap(), topic, partitions)) {
        if (low != 0)
            throw std::runtime_error(fmt::format(
                "the mock cluster dropped records of {} (it keeps at most 5 MiB per partition): "
                "use more --partitions or fewer --records",
                topic));
        counts.push_back(high);
    }
    return counts;
}

std::int64_t BenchWorld::messages_in(const std::string& topic) const {
    std::int64_t total = 0;
    for (auto n : records_per_partition(topic, options_.partitions)) total += n;
    return total;
}

Isolation BenchWorld::isolate(const std::string& scenario) {
    Isolation iso;
    iso.name = sanitize(fmt::format("bench_{}_r{}_{}", ::getpid(), run_, scenario));
    iso.schema = iso.name;
    iso.group = iso.name;
    iso.key_prefix = iso.name;
    {
        pqxx::connection c(options_.postgres_uri);
        pqxx::nontransaction tx(c);
        tx.exec("DROP SCHEMA IF EXISTS " + iso.schema + " CASCADE");
        tx.exec("CREATE SCHEMA " + iso.schema);
    }
    iso.uri = with_search_path(options_.postgres_uri, iso.schema);
    pqxx::connection c(iso.uri);
    std::vector<Migration> ledger;
    for (const auto& m : handlers::kLedgerMigrations)
        ledger.push_back({std::string(m.name), std::string(m.sql)});
    apply_migrations(c, ledger);
    return iso;
}

void BenchWorld::clean_up(const Isolation& iso) {
    try {
        pqxx::connection c(options_.postgres_uri);
        pqxx::nontransaction tx(c);
        tx.exec("DROP SCHEMA IF EXISTS " + iso.schema + " CASCADE");
    } catch (const std::exception& e) {
        std::cerr << "warning: could not drop schema " << iso.schema << ": " << e.what() << "\n";
    }
    try {
        RedisOptions redis_options;
        redis_options.host = options_.redis_host;
        redis_options.port = options_.redis_port;
        redis_options.command_timeout = std::chrono::milliseconds(10000);
        RedisConnection redis(redis_options);
        std::string cursor = "0";
        do {
            auto reply =
                redis.command({"SCAN", cursor, "MATCH", iso.key_prefix + ":*", "COUNT", "5000"});
            if (reply.type != RedisReply::Type::array || reply.elements.size() != 2) break;
            cursor = reply.elements[0].str;
            std::vector<std::string> unlink{"UNLINK"};
            for (const auto& k : reply.elements[1].elements) unlink.push_back(k.str);
            if (unlink.size() > 1) redis.command(unlink);
        } while (cursor != "0");
    } catch (const std::exception& e) {
        std::cerr << "warning: could not delete Redis keys " << iso.key_prefix << ":*: " << e.what()
                  << "\n";
    }
}

std::map<std::string, std::string> BenchWorld::consumer_properties() const {
    std::map<std::string, std::string> p;
    // The mock cluster's settings from docs/design.md#kafka-facts-to-design-around /
    // config/exo.yaml: a rejoin waits session.timeout.ms - 1 s, an empty fetch waits
    // fetch.wait.max.ms. A real broker answers a fetch as soon as data arrives: there librdkafka's
    // defaults, as a user starts with.
    if (mock_)
        p = {{"session.timeout.ms", "6000"},
             {"heartbeat.interval.ms", "1000"},
             {"fetch.wait.max.ms", "20"}};
    for (const auto& [k, v] : options_.kafka_properties) p[k] = v;
    return p;
}

Config BenchWorld::pipeline_config(const Isolation& iso, const std::string& topic) const {
    Config c;  // config.hpp defaults for everything not set here
    c.kafka.bootstrap_servers = bootstrap();
    c.kafka.group_id = iso.group;
    c.kafka.properties = consumer_properties();
    c.redis.host = options_.redis_host;
    c.redis.port = options_.redis_port;
    c.redis.key_prefix = iso.key_prefix;
    c.postgres.uri = iso.uri;
    c.logging.level = options_.log_level;
    BindingConfig b;
    b.topic = topic;
    b.handler = "ledger";
    b.key = ledger_key_source();
    b.sequence = ledger_sequence_config();
    b.dead_letter_topic = topic + ".dlq";
    c.bindings.push_back(b);
    return c;
}

std::string BenchWorld::check_exactly_once(const Isolation& iso, const PaymentWorkload& w,
                                           DedupTable dedup) const {
    pqxx::connection c(iso.uri);
    pqxx::nontransaction tx(c);
    std::map<std::string, std::int64_t> balances;
    for (const auto& row : tx.exec("SELECT account_id, balance FROM accounts"))
        balances[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    std::string problems;
    if (balances != w.expected_balances) {
        std::size_t wrong = 0;
        std::string example;
        for (const auto& [account, expected] : w.expected_balances) {
            auto it = balances.find(account);
            if (it == balances.end() || it->second != expected) {
                if (wrong++ == 0)
                    example = fmt::format(
                        "{}: expected {}, found {}", account, expected,
                        it == balances.end() ? std::string("no row") : std::to_string(it->second));
            }
        }
        problems += fmt::format("{} of {} balances wrong (e.g. {}); {} accounts in the table; ",
                                wrong, w.expected_balances.size(), example, balances.size());
    }
    auto count = [&](const char* sql) { return tx.exec(sql)[0][0].as<std::int64_t>(); };
    auto expected = static_cast<std::int64_t>(w.unique_events);
    auto entries = count("SELECT count(*) FROM ledger_entries");
    if (entries != expected)
        problems += fmt::format("ledger_entries has {} rows, expected {}; ", entries, expected);
    auto applied = dedup == DedupTable::exo_processed
                       ? count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'")
                       : count("SELECT count(*) FROM peer_inbox");
    if (applied != expected)
        problems += fmt::format("{} has {} applied rows, expected {}; ",
                                dedup == DedupTable::exo_processed ? "exo_processed" : "peer_inbox",
                                applied, expected);
    return problems;
}

}  // namespace exo::bench
