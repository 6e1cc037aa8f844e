#include "pipeline_harness.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <iterator>

#include "apache_kafka.hpp"
#include "kafka/group_progress.hpp"
#include "ordering_handlers.hpp"
#include "outside_handlers.hpp"
#include "pg/migrations.hpp"
#include "redis/redis_connection.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

namespace exo::testing {
namespace {

std::string with_search_path(const std::string& uri, const std::string& schema) {
    // libpq URI parameter `options`: -csearch_path=<schema> (URI-encoded '=').
    return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
           schema;
}

std::string ordering_name(Ordering ordering) {
    switch (ordering) {
        case Ordering::partition:
            return "partition";
        case Ordering::key:
            return "key";
        case Ordering::entity:
            return "entity";
    }
    return "?";
}

}  // namespace

void services(const std::string& action) {
    // Its output goes to a file, shown only when the command fails: a passing
    // run stays quiet.
    const std::string log = required_env("EXO_SERVICES_DIR") + "/" + action + ".out";
    auto command = "bash '" + required_env("EXO_SERVICES_SCRIPT") + "' " + action + " '" +
                   required_env("EXO_SERVICES_DIR") + "' > '" + log + "' 2>&1";
    if (std::system(command.c_str()) == 0) return;
    std::ifstream in(log);
    std::string output((std::istreambuf_iterator<char>(in)), {});
    FAIL(command << " failed:\n" << output);
}

PipelineHarness::PipelineHarness(HarnessOptions options) : options_(std::move(options)) {
    auto id = unique_name(options_.name);
    for (auto& c : id)
        if (c == '-') c = '_';
    schema_ = "t_" + id;
    topic_ = "payments_" + id;
    group_ = "group_" + id;
    prefix_ = "exo_test_" + id;
    {
        pqxx::connection c(testing::postgres_uri());
        pqxx::nontransaction tx(c);
        tx.exec("CREATE SCHEMA " + schema_);
    }
    uri_ = with_search_path(testing::postgres_uri(), schema_);
    {
        pqxx::connection c(uri_);
        apply_migrations(c, ledger_migrations());
    }
    if (options_.kafka == KafkaUnderTest::mock) {
        cluster_ = std::make_unique<MockCluster>(options_.brokers);
        bootstrap_ = cluster_->bootstrap_servers();
        cluster_->create_topic(topic_, options_.partitions);
        cluster_->create_topic(topic_ + ".dlq", 1);
        cluster_->create_topic(handlers::kDefaultAppliedTopic, 2);  // the ledger emits there
    } else {
        // The real broker creates no topic on use. The ledger's topic is shared by every
        // harness on the broker (made once: an existing topic is left as it is).
        bootstrap_ = apache_kafka_bootstrap();
        create_topics(bootstrap_, {{topic_, options_.partitions},
                                   {topic_ + ".dlq", 1},
                                   {std::string(handlers::kDefaultAppliedTopic), 2}});
    }
    registry_.add("ledger", [](const HandlerOptions&) {
        return std::make_unique<handlers::LedgerHandler>();
    });
    registry_.add("ledger_per_record", [](const HandlerOptions&) {
        return std::make_unique<handlers::LedgerRecordHandler>();
    });
    registry_.add("cue_batch_ledger",
                  [](const HandlerOptions&) { return std::make_unique<CueBatchLedger>(); });
    auto slow_for = options_.slow_for;
    registry_.add("misbehaving_ledger", [slow_for](const HandlerOptions&) {
        return std::make_unique<MisbehavingLedger>(slow_for);
    });
    registry_.add("order_recording", [slow_for](const HandlerOptions&) {
        return std::make_unique<OrderRecordingHandler>(slow_for);
    });
    registry_.add("outside_recording", [](const HandlerOptions&) {
        return std::make_unique<OutsideRecordingHandler>();
    });
    registry_.add("outside_recording_batch", [](const HandlerOptions&) {
        return std::make_unique<OutsideRecordingBatchHandler>();
    });
    registry_.add("emitting_ledger", [slow_for](const HandlerOptions&) {
        return std::make_unique<EmittingLedger>(slow_for);
    });
    registry_.add("unprepared_ledger", [slow_for](const HandlerOptions&) {
        return std::make_unique<UnpreparedLedger>(slow_for);
    });
    registry_.add("foreign_prepare_ledger", [slow_for](const HandlerOptions&) {
        return std::make_unique<ForeignThrowingPrepareLedger>(slow_for);
    });

    auto redis = redis_options();
    config_.kafka.bootstrap_servers = bootstrap_;
    config_.kafka.group_id = group_;
    config_.kafka.commit_interval = std::chrono::milliseconds(200);
    config_.kafka.properties = {
        {"session.timeout.ms", std::to_string(options_.session_timeout.count())},
        {"heartbeat.interval.ms", "500"}};
    // The mock answers an empty fetch only after fetch.wait.max.ms; a real broker as soon
    // as records arrive, so its cases keep librdkafka's default.
    if (options_.kafka == KafkaUnderTest::mock)
        config_.kafka.properties["fetch.wait.max.ms"] = "20";
    config_.redis.host = redis.host;
    config_.redis.port = redis.port;
    config_.redis.key_prefix = prefix_;
    config_.redis.connect_timeout = std::chrono::milliseconds(500);
    config_.redis.command_timeout = std::chrono::milliseconds(1000);
    config_.postgres.uri = uri_;
    config_.claim.lease = options_.lease;
    config_.pipeline.concurrency = options_.concurrency;
    config_.pipeline.batch_size = options_.batch_size;
    config_.pipeline.linger = std::chrono::milliseconds(2);
    config_.pipeline.retry_backoff_initial = std::chrono::milliseconds(20);
    config_.pipeline.retry_backoff_max = std::chrono::milliseconds(500);
    config_.pipeline.shutdown_timeout = std::chrono::milliseconds(5000);
    config_.pipeline.on_redis_down = options_.on_redis_down;
    config_.outbox.poll_interval = std::chrono::milliseconds(200);
    BindingConfig b;
    b.topic = topic_;
    b.handler = options_.handler;
    b.key = {KeySourceKind::json, "/eventId"};
    if (options_.with_sequence)
        b.sequence =
            SequenceConfig{"/accountId", "/sequenceId", options_.mode, options_.gap_timeout};
    b.ordering = options_.ordering;
    b.max_attempts = options_.max_attempts;
    b.dead_letter_topic = topic_ + ".dlq";
    config_.bindings.push_back(b);
}

PipelineHarness::~PipelineHarness() = default;

MockCluster& PipelineHarness::cluster() {
    REQUIRE_MESSAGE(cluster_ != nullptr,
                    "cluster(): the mock cluster's fault injection, and this harness runs on "
                    "the real Apache Kafka");
    return *cluster_;
}

void PipelineHarness::produce(const PaymentWorkload& workload) {
    produce(workload.messages);
}

void PipelineHarness::produce(const std::vector<PaymentMessage>& messages) {
    KafkaProducer producer(ProducerOptions{bootstrap(), {}});
    for (const auto& m : messages)
        producer.produce({topic_, m.partition, m.payment.account_id, m.payment.json(), {}});
    producer.flush(std::chrono::seconds(30));
}

namespace {
std::vector<std::string> cluster_names(const std::vector<HostPort>& nodes) {
    std::vector<std::string> out;
    for (const auto& n : nodes) out.push_back(n.name());
    return out;
}
}  // namespace

std::string PipelineHarness::config_yaml() const {
    const auto& b = config_.bindings.front();
    std::string properties;  // as a test set them, e.g. a shorter session.timeout.ms
    for (const auto& [name, value] : config_.kafka.properties)
        properties += fmt::format("{}{}: \"{}\"", properties.empty() ? "" : ", ", name, value);
    std::string options;  // the binding's, as a test set them (e.g. the ledger's max_amount)
    for (const auto& key : b.options.keys())
        options +=
            fmt::format("{}{}: \"{}\"", options.empty() ? "" : ", ", key, b.options.string(key));
    return fmt::format(
        "kafka:\n"
        "  bootstrap_servers: \"{}\"\n"
        "  group_id: {}\n"
        "  commit_interval_ms: 200\n"
        "  properties: {{{}}}\n"
        "{}"
        "postgres: {{uri: \"{}\"}}\n"
        "{}"
        "pipeline: {{concurrency: {}, batch_size: {}, linger_ms: 2}}\n"
        "logging: {{level: info}}\n"
        "outbox: {{enabled: {}, batch_size: {}, poll_interval_ms: {}{}}}\n"
        "bindings:\n"
        "  - topic: {}\n"
        "    handler: ledger\n"
        "    key: {{json: /eventId}}\n"
        "{}{}{}{}",
        bootstrap(), group_, properties,
        // Without Redis claims the Redis keys are refused (config_parser.cpp).
        !config_.claim.in_redis() ? std::string()
        // A test that set redis.cluster (redis_cluster_test.cpp) runs on its cluster.
        : config_.redis.cluster.empty()
            ? fmt::format("redis: {{host: {}, port: {}, key_prefix: {}}}\n", config_.redis.host,
                          config_.redis.port, prefix_)
            : fmt::format("redis: {{cluster: [{}], key_prefix: {}}}\n",
                          fmt::join(cluster_names(config_.redis.cluster), ", "), prefix_),
        uri_,
        config_.claim.in_redis()
            ? fmt::format("claim: {{lease_ms: {}}}\n", config_.claim.lease.count())
            : std::string("claim: {store: postgres}\n"),
        // Always written: left out, a binding's ordering: key would make it 16.
        config_.pipeline.concurrency, config_.pipeline.batch_size, config_.outbox.enabled,
        config_.outbox.batch_size, config_.outbox.poll_interval.count(),
        // As a test set them (a topic declared for the start-up check).
        config_.outbox.topics.empty()
            ? std::string()
            : fmt::format(", topics: [{}]", fmt::join(config_.outbox.topics, ", ")),
        b.topic,
        b.dead_letter_topic == b.topic + ".dlq"
            ? std::string()
            : fmt::format("    dead_letter_topic: {}\n", b.dead_letter_topic),
        b.ordering == Ordering::partition
            ? std::string()
            : fmt::format("    ordering: {}\n", ordering_name(b.ordering)),
        options.empty() ? std::string() : fmt::format("    options: {{{}}}\n", options),
        b.sequence
            ? fmt::format("    sequence: {{entity: /accountId, value: /sequenceId, mode: {}{}}}\n",
                          b.sequence->mode == SequenceMode::strict ? "strict" : "latest",
                          b.sequence->scope == SequenceScope::group ? ", scope: group" : "")
            : "");
}

bool PipelineHarness::wait_until_consumed(std::chrono::seconds timeout) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (group_lag(bootstrap(), group_, topic_) == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

std::string PipelineHarness::claim_state(const std::string& key) const {
    RedisConnection redis(redis_options());
    auto reply = redis.command(
        {"HGET", config_.redis.key_prefix + ":" + config_.kafka.group_id + ":" + key, "state"});
    return reply.type == RedisReply::Type::nil ? "(none)" : reply.str;
}

std::map<std::string, std::int64_t> PipelineHarness::balances() const {
    pqxx::connection c(uri_);
    pqxx::nontransaction tx(c);
    std::map<std::string, std::int64_t> out;
    for (const auto& row : tx.exec("SELECT account_id, balance FROM accounts"))
        out[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    return out;
}

std::int64_t PipelineHarness::count(const std::string& sql) const {
    pqxx::connection c(uri_);
    pqxx::nontransaction tx(c);
    return single_number(tx, sql);
}

void PipelineHarness::check_exactly_once(const PaymentWorkload& workload) const {
    CHECK(balances() == workload.expected_balances);
    CHECK(count("SELECT count(*) FROM ledger_entries") ==
          static_cast<std::int64_t>(workload.unique_events));
    CHECK(count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") ==
          static_cast<std::int64_t>(workload.unique_events));
}

RunningDaemon::RunningDaemon(const Config& config, const HandlerRegistry& registry,
                             const std::string& bootstrap, const std::string& failpoints)
    : failpoints_(Failpoints::parse(failpoints)),
      process_(std::make_unique<ConsumerProcess>(config, registry, failpoints_, bootstrap)) {
    thread_ = std::thread([this] {
        try {
            process_->run(stop_.get_token());
        } catch (...) {
            error_ = std::current_exception();
        }
    });
}

void RunningDaemon::stop() {
    if (!thread_.joinable()) return;
    stop_.request_stop();
    thread_.join();
    if (error_) std::rethrow_exception(error_);
}

RunningDaemon::~RunningDaemon() {
    try {
        stop();
    } catch (const std::exception& e) {
        FAIL_CHECK("daemon failed: " << e.what());
    }
}

}  // namespace exo::testing
