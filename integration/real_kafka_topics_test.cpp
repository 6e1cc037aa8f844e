// Against a real Apache Kafka (scripts/kafka.sh, auto.create.topics.enable=false as production
// clusters run): the topics exo consumes from and produces to, and the offsets it reports.
//   - an emit over its topic's max.message.bytes, as the broker reports it, refused at emit()
//     (its record dead-lettered with the topic, the size and the limit), emits that each fit it
//     never batched over it by the relay, and a dead letter over its dead-letter topic's limit
//     delivered without the original value (as exo did already);
//   - a missing dead-letter or declared outbox topic named at start-up with its config key, the
//     daemon not ready and out of the group until it exists; a missing input topic named, the
//     daemon not ready until it exists;
//   - /status, /metrics and /readyz reading the group's committed offsets on the broker: the
//     lag of records produced while no daemon ran (counted from the committed offset, not the
//     consumer's position, which has read them), and 0 with committed == end after.
// Every case is tagged real-kafka (scripts/integration.sh's real-kafka part); the daemons are
// `exo run` child processes.
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>

#include "apache_kafka.hpp"
#include "child_process.hpp"
#include "kafka/producer.hpp"
#include "ledger.hpp"
#include "observability_support.hpp"
#include "operations_cli.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::ChildProcess;
using exo::testing::free_port;
using exo::testing::get;
using exo::testing::KafkaUnderTest;
using exo::testing::metric_sum;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::wait_until;
using exo::testing::ops::outcome;

namespace {

// Writes `text` to `path`; returns the path.
std::string written(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
    return path;
}

// An `exo run` child process on the harness's config (plus `extra` YAML), its log beside it.
class ExoRun {
public:
    ExoRun(const PipelineHarness& h, const std::string& name, const std::string& extra = "")
        : config_(written("/tmp/" + h.schema() + "-" + name + ".yaml", h.config_yaml() + extra)),
          log_("/tmp/" + h.schema() + "-" + name + ".log"),
          child_(exo::testing::exo_binary(), {"run", "--config", config_}, {}, log_) {}

    // SIGTERM, then its exit status.
    int terminate() {
        child_.signal(SIGTERM);
        auto status = child_.wait(60s);
        REQUIRE_MESSAGE(status.has_value(), "the daemon still runs 60 s after SIGTERM");
        return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
    }
    std::string log() const {
        std::ifstream in(log_);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }
    // Waits until its log holds `what`; fails the case with the log otherwise.
    void wait_for_log(const std::string& what, std::chrono::seconds timeout = 60s) const {
        std::string text;
        REQUIRE_MESSAGE(exo::testing::eventually(
                            [&] {
                                text = log();
                                return text.find(what) != std::string::npos;
                            },
                            timeout),
                        "the daemon's log never said '" << what << "':\n"
                                                        << text);
    }

private:
    const std::string config_, log_;
    ChildProcess child_;  // after config_ and log_, which it reads and writes
};

std::string listen_on(int port) {
    return "observability:\n  listen: \"127.0.0.1:" + std::to_string(port) + "\"\n";
}

// A payment whose JSON carries `padding` bytes more (a field the ledger ignores).
std::string padded_payment(const std::string& event, const std::string& account,
                           std::size_t padding) {
    auto doc = nlohmann::json::parse(payment(event, account, 10, 1).payment.json());
    doc["note"] = std::string(padding, 'x');
    return doc.dump();
}

void produce_values(const PipelineHarness& h,
                    const std::vector<std::pair<std::string, std::string>>& keyed_values) {
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    for (const auto& [key, value] : keyed_values) producer.produce({h.topic(), 0, key, value, {}});
    producer.flush(30s);
}

// The group's committed offset on `partition` of the harness's topic (-1: none), read from the
// broker; retried while its coordinator is not yet known (a broker just started answers
// NOT_COORDINATOR for a group nobody joined).
std::int64_t group_committed(const PipelineHarness& h, int partition) {
    std::int64_t offset = -2;
    std::string last;
    REQUIRE_MESSAGE(exo::testing::eventually(
                        [&] {
                            try {
                                offset = exo::testing::committed_offset(
                                    h.bootstrap(), h.config().kafka.group_id, h.topic(), partition);
                                return true;
                            } catch (const std::exception& e) {
                                last = e.what();
                                return false;
                            }
                        },
                        30000ms),
                    last);
    return offset;
}

std::string dead_letter_reason(const PipelineHarness& h, const std::string& key) {
    pqxx::connection c(h.postgres_uri());
    pqxx::read_transaction tx(c);
    auto r = tx.exec_params("SELECT result FROM exo_processed WHERE idempotency_key = $1", key);
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].as<std::string>();
}

}  // namespace

TEST_CASE(
    "on Apache Kafka, an emit larger than its topic's max.message.bytes is refused at emit() "
    "naming the topic, its size and the broker's limit, and its record is dead-lettered with that "
    "reason instead of parking the relay" *
    doctest::test_suite("real-kafka")) {
    PipelineHarness h({.name = "rk_emit_limit", .partitions = 1, .kafka = KafkaUnderTest::apache});
    const std::string applied = h.topic() + ".applied";
    exo::testing::create_topics(h.bootstrap(), {{applied, 1}}, {{"max.message.bytes", "4000"}});
    h.mutable_config().bindings[0].options =
        exo::testing::handler_options({{"applied_topic", applied}});
    h.mutable_config().outbox.topics = {applied};
    // The ledger emits the payment as it came: 3,000 bytes fit the topic, 5,000 do not (both
    // fit the producer's message.max.bytes of 1,000,000, all exo checked before).
    produce_values(h, {{"acc-1", padded_payment("fits-1", "acc-1", 3000)},
                       {"acc-2", padded_payment("big-2", "acc-2", 5000)},
                       {"acc-3", padded_payment("fits-3", "acc-3", 10)}});
    ExoRun d(h, "emit-limit");
    REQUIRE(h.wait_until_consumed(90s));
    CHECK(d.log().find("topic '" + applied + "' takes record batches of up to 4000 bytes") !=
          std::string::npos);

    CHECK(outcome(h, "fits-1") == "APPLIED");
    CHECK(outcome(h, "fits-3") == "APPLIED");
    REQUIRE_MESSAGE(outcome(h, "big-2") == "DEAD_LETTERED",
                    "outbox rows pending " << h.count("SELECT count(*) FROM exo_outbox_pending")
                                           << ", parked units "
                                           << h.count("SELECT count(*) FROM exo_outbox_units"));
    const auto reason = dead_letter_reason(h, "big-2");
    CHECK_MESSAGE(
        reason.find("topic '" + applied + "''s max.message.bytes of 4000") != std::string::npos,
        reason);
    CHECK_MESSAGE(reason.find("bytes on the wire") != std::string::npos, reason);
    // The dead letter in Kafka says so too.
    const auto letters = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(letters.size() == 1);
    CHECK(exo::testing::header(letters[0], "exo-error").find("max.message.bytes of 4000") !=
          std::string::npos);
    // Nothing waits in the outbox: the two that fit are published, no row was written for
    // the one that did not (before, it was written and the relay parked its key for good).
    wait_until(
        "the relay to publish every row", 60s,
        [&] { return h.count("SELECT count(*) FROM exo_outbox_pending"); },
        [](std::int64_t n) { return n == 0; });
    CHECK(h.count("SELECT count(*) FROM exo_outbox") == 2);
    CHECK(h.count("SELECT count(*) FROM exo_outbox_units") == 0);
    CHECK(exo::testing::read_topic(h.bootstrap(), applied, 2).size() == 2);
    CHECK(d.terminate() == 0);
}

TEST_CASE(
    "on Apache Kafka, a dead letter larger than its dead-letter topic's max.message.bytes is "
    "delivered without the original value, with its reason and coordinates" *
    doctest::test_suite("real-kafka")) {
    PipelineHarness h({.name = "rk_dlq_limit", .partitions = 1, .kafka = KafkaUnderTest::apache});
    const std::string dlq = h.topic() + ".small-dlq";
    exo::testing::create_topics(h.bootstrap(), {{dlq, 1}}, {{"max.message.bytes", "4000"}});
    h.mutable_config().bindings[0].dead_letter_topic = dlq;
    h.mutable_config().bindings[0].options =
        exo::testing::handler_options({{"max_amount", "5"}, {"applied_topic", ""}});
    produce_values(h, {{"acc-1", padded_payment("big-1", "acc-1", 6000)}});
    ExoRun d(h, "dlq-limit");
    REQUIRE(h.wait_until_consumed(90s));
    REQUIRE(outcome(h, "big-1") == "DEAD_LETTERED");
    const auto letters = exo::testing::read_topic(h.bootstrap(), dlq, 1);
    REQUIRE(letters.size() == 1);
    CHECK(letters[0].value.size() < 4000);
    CHECK(letters[0].value.find(std::string(100, 'x')) == std::string::npos);
    CHECK(exo::testing::header(letters[0], "exo-original-topic") == h.topic());
    CHECK(exo::testing::header(letters[0], "exo-original-offset") == "0");
    CHECK(exo::testing::header(letters[0], "exo-error").find("max_amount 5") != std::string::npos);
    CHECK(d.terminate() == 0);
}

TEST_CASE(
    "on Apache Kafka with topic auto-creation off, a missing dead-letter or declared outbox topic "
    "is named at start-up with its config key, and the daemon stays not ready and out of the "
    "group until both exist" *
    doctest::test_suite("real-kafka")) {
    PipelineHarness h({.name = "rk_missing_out", .partitions = 1, .kafka = KafkaUnderTest::apache});
    const std::string dlq = h.topic() + ".later-dlq";
    const std::string out = h.topic() + ".later-out";
    h.mutable_config().bindings[0].dead_letter_topic = dlq;
    h.mutable_config().bindings[0].options =
        exo::testing::handler_options({{"applied_topic", out}});
    h.mutable_config().outbox.topics = {out};
    h.produce({payment("p-1", "acc-1", 10, 1), payment("p-2", "acc-2", 20, 1)});
    const int port = free_port();
    ExoRun d(h, "missing-out", listen_on(port));
    d.wait_for_log("'" + dlq + "' (bindings[0].dead_letter_topic");
    d.wait_for_log("'" + out + "' (outbox.topics[0]");
    const auto ready = get(port, "/readyz");
    CHECK(ready.status == 503);
    CHECK_MESSAGE(ready.body.find(dlq) != std::string::npos, ready.body);
    // Out of the group: nothing consumed, nothing committed, no member.
    CHECK(h.count("SELECT count(*) FROM exo_processed") == 0);
    CHECK(group_committed(h, 0) == -1);
    CHECK(exo::testing::describe_group(h.bootstrap(), h.config().kafka.group_id).members == 0);

    exo::testing::create_topics(h.bootstrap(), {{dlq, 1}, {out, 1}});
    REQUIRE(h.wait_until_consumed(90s));
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 2);
    CHECK(exo::testing::read_topic(h.bootstrap(), out, 2).size() == 2);
    CHECK_MESSAGE(
        exo::testing::eventually([&] { return get(port, "/readyz").status == 200; }, 60000ms),
        get(port, "/readyz").body);
    CHECK(d.terminate() == 0);
}

TEST_CASE(
    "on Apache Kafka with topic auto-creation off, a missing input topic is named and the daemon "
    "is not ready until it exists, then consumes it" *
    doctest::test_suite("real-kafka")) {
    PipelineHarness h({.name = "rk_missing_in", .partitions = 1, .kafka = KafkaUnderTest::apache});
    const std::string input = h.topic() + ".later";
    h.mutable_config().bindings[0].topic = input;
    h.mutable_config().bindings[0].dead_letter_topic = h.topic() + ".dlq";  // exists
    const int port = free_port();
    ExoRun d(h, "missing-in", listen_on(port));
    d.wait_for_log("Subscribed topic not available: " + input);
    CHECK(exo::testing::eventually([&] { return get(port, "/status").status == 200; }, 30000ms));
    CHECK(get(port, "/readyz").status == 503);

    exo::testing::create_topics(h.bootstrap(), {{input, 1}});
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    producer.produce({input, 0, "acc-1", payment("in-1", "acc-1", 10, 1).payment.json(), {}});
    producer.flush(30s);
    wait_until(
        "the record of the topic created late to be applied", 120s,
        [&] { return h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'"); },
        [](std::int64_t n) { return n == 1; });
    CHECK_MESSAGE(
        exo::testing::eventually([&] { return get(port, "/readyz").status == 200; }, 60000ms),
        get(port, "/readyz").body);
    CHECK(d.terminate() == 0);
}

TEST_CASE(
    "on Apache Kafka, /status and /metrics show the group's committed offsets from the broker: "
    "the lag of records produced while no daemon ran, then committed == end and lag 0" *
    doctest::test_suite("real-kafka")) {
    PipelineHarness h({.name = "rk_lag", .partitions = 2, .kafka = KafkaUnderTest::apache});
    auto batch = [&](const std::string& prefix, int per_partition) {
        std::vector<exo::PaymentMessage> out;
        for (int p = 0; p < 2; ++p)
            for (int i = 0; i < per_partition; ++i)
                out.push_back(payment(prefix + std::to_string(p) + "-" + std::to_string(i),
                                      "acc-" + std::to_string(p), 1,
                                      i + 1 + (prefix == "b" ? 10 : 0), p));
        return out;
    };
    h.produce(batch("a", 10));
    {
        ExoRun first(h, "lag-first");
        REQUIRE(h.wait_until_consumed(90s));
        CHECK(first.terminate() == 0);
    }
    for (int p = 0; p < 2; ++p) REQUIRE(group_committed(h, p) == 10);
    // Produced while no daemon runs: the group is 7 behind on each partition.
    h.produce(batch("b", 7));

    // The next daemon cannot apply them while the test holds exo_processed locked: what it
    // reports is what the broker holds for the group, not what it did itself.
    pqxx::connection blocker(h.postgres_uri());
    pqxx::work lock(blocker);
    lock.exec("LOCK TABLE exo_processed IN ACCESS EXCLUSIVE MODE");
    const int port = free_port();
    ExoRun d(h, "lag", listen_on(port));
    nlohmann::json status;
    auto partitions_say = [&](std::int64_t committed, std::int64_t lag) {
        const auto got = get(port, "/status");
        if (got.status == 0) return false;
        status = nlohmann::json::parse(got.body, nullptr, false);
        if (!status.is_object() || !status.contains("partitions")) return false;
        int matching = 0;
        for (const auto& p : status["partitions"])
            if (p.value("committed", nlohmann::json()) == committed &&
                p.value("lag", nlohmann::json()) == lag)
                ++matching;
        return matching == 2;
    };
    CHECK_MESSAGE(exo::testing::eventually([&] { return partitions_say(10, 7); }, 60000ms),
                  "/status: " << status.dump());
    CHECK(metric_sum(get(port, "/metrics").body, "exo_consumer_lag", "") == 14.0);
    CHECK(h.count("SELECT count(*) FROM ledger_entries WHERE event_id LIKE 'b%'") == 0);

    lock.abort();
    REQUIRE(h.wait_until_consumed(120s));
    CHECK_MESSAGE(exo::testing::eventually([&] { return partitions_say(17, 0); }, 60000ms),
                  "/status: " << status.dump());
    CHECK(metric_sum(get(port, "/metrics").body, "exo_consumer_lag", "") == 0.0);
    for (int p = 0; p < 2; ++p) {
        CHECK(group_committed(h, p) == 17);
        CHECK(exo::testing::partition_end(h.bootstrap(), h.topic(), p) == 17);
    }
    CHECK(get(port, "/readyz").status == 200);
    CHECK(d.terminate() == 0);
}

TEST_CASE(
    "on Apache Kafka, emits that each fit their topic's small max.message.bytes are all "
    "published at once: the relay never batches them over the limit" *
    doctest::test_suite("real-kafka")) {
    PipelineHarness h({.name = "rk_emit_batch", .partitions = 1, .kafka = KafkaUnderTest::apache});
    const std::string applied = h.topic() + ".applied";
    exo::testing::create_topics(h.bootstrap(), {{applied, 1}}, {{"max.message.bytes", "4000"}});
    h.mutable_config().bindings[0].options =
        exo::testing::handler_options({{"applied_topic", applied}});
    h.mutable_config().outbox.topics = {applied};
    // 40 emits of about 3,100 bytes, each under 4,000 in a batch of its own, to 40 keys: one
    // relay round, which librdkafka would put in one partition's batches of up to 1,000,000.
    std::vector<std::pair<std::string, std::string>> values;
    for (int i = 0; i < 40; ++i)
        values.push_back(
            {"acc-" + std::to_string(i),
             padded_payment("e-" + std::to_string(i), "acc-" + std::to_string(i), 3000)});
    produce_values(h, values);
    ExoRun d(h, "emit-batch");
    REQUIRE(h.wait_until_consumed(90s));
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'APPLIED'") == 40);
    wait_until(
        "the relay to publish every row", 60s,
        [&] { return h.count("SELECT count(*) FROM exo_outbox_pending"); },
        [](std::int64_t n) { return n == 0; });
    CHECK(exo::testing::read_topic(h.bootstrap(), applied, 40).size() == 40);
    // Never refused on the way (before: MSG_SIZE_TOO_LARGE for whole batches, their keys
    // parked and retried after backoffs).
    CHECK_MESSAGE(d.log().find("MSG_SIZE_TOO_LARGE") == std::string::npos, d.log());
    CHECK(d.terminate() == 0);
}
