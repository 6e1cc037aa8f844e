// The librdkafka layer against an in-process mock cluster, reached over TCP by
// real librdkafka clients. A group's first join takes ~3 s on the mock, so each
// test uses as few groups as it can.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "app/mock_kafka_command.hpp"
#include "kafka/consumer.hpp"
#include "kafka/mock_cluster.hpp"
#include "kafka/producer.hpp"
#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using exo::KafkaConsumer;
using exo::KafkaProducer;
using exo::Offset;
using exo::Partition;
using exo::Record;
using exo::Topic;
using exo::TopicPartition;
using exo::testing::unique_name;

// Kafka API keys (RD_KAFKAP_* live in librdkafka's private rdkafka_protocol.h).
constexpr int kApiProduce = 0;
constexpr int kApiOffsetCommit = 8;

class RecordingListener : public exo::RebalanceListener {
public:
    void on_assigned(const std::vector<TopicPartition>& partitions) override {
        assignments.push_back(partitions);
        assigned.insert(partitions.begin(), partitions.end());
        if (after_assign) after_assign(partitions);
    }
    void on_revoked(const std::vector<TopicPartition>& partitions, bool lost) override {
        revocations.emplace_back(partitions, lost);
        for (const auto& tp : partitions) assigned.erase(tp);
        if (before_revoke) before_revoke(partitions, lost);
    }

    std::set<TopicPartition> assigned;  // what the consumer holds now
    std::vector<std::vector<TopicPartition>> assignments;
    std::vector<std::pair<std::vector<TopicPartition>, bool>> revocations;
    // Run inside the callbacks, e.g. to pause or to commit synchronously as the pipeline does.
    std::function<void(const std::vector<TopicPartition>&)> after_assign;
    std::function<void(const std::vector<TopicPartition>&, bool)> before_revoke;
};

exo::ConsumerOptions consumer_options(const std::string& bootstrap, const std::string& group,
                                      const std::string& topic,
                                      const std::map<std::string, std::string>& extra = {}) {
    exo::ConsumerOptions o;
    o.bootstrap_servers = bootstrap;
    o.group_id = group;
    o.topics = {topic};
    // Mock-cluster timings (docs/design.md#kafka-facts-to-design-around): a rejoin waits
    // session.timeout.ms - 1 s and an empty fetch waits the full fetch.wait.max.ms.
    o.properties = {{"session.timeout.ms", "6000"},
                    {"heartbeat.interval.ms", "500"},
                    {"fetch.wait.max.ms", "20"}};
    for (auto& [k, v] : extra) o.properties[k] = v;
    return o;
}

KafkaProducer make_producer(const std::string& bootstrap,
                            const std::map<std::string, std::string>& extra = {}) {
    exo::ProducerOptions o;
    o.bootstrap_servers = bootstrap;
    o.properties = {{"linger.ms", "5"}};
    for (auto& [k, v] : extra) o.properties[k] = v;
    return KafkaProducer(o);
}

exo::OutgoingRecord outgoing(const std::string& topic, int partition, std::string value) {
    exo::OutgoingRecord r;
    r.topic = topic;
    r.partition = partition;
    r.value = std::move(value);
    return r;
}

// Polls until `done` holds for everything received so far, or fails the test at `limit`.
std::vector<Record> poll_until(KafkaConsumer& consumer,
                               const std::function<bool(const std::vector<Record>&)>& done,
                               std::chrono::milliseconds limit = 20s) {
    std::vector<Record> all;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done(all)) {
        REQUIRE_MESSAGE(
            std::chrono::steady_clock::now() < deadline,
            "gave up waiting after " << limit.count() << " ms with " << all.size() << " records");
        for (auto& r : consumer.poll(100, 100ms)) all.push_back(std::move(r));
    }
    return all;
}

std::vector<Record> poll_for(KafkaConsumer& consumer, std::chrono::milliseconds how_long) {
    std::vector<Record> all;
    const auto deadline = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < deadline)
        for (auto& r : consumer.poll(100, 50ms)) all.push_back(std::move(r));
    return all;
}

std::size_t count_in(const std::vector<Record>& records, int partition) {
    return static_cast<std::size_t>(std::count_if(
        records.begin(), records.end(), [&](auto& r) { return r.partition.value == partition; }));
}

template <class Exception, class F>
Exception caught(F&& f) {
    try {
        f();
    } catch (const Exception& e) {
        return e;
    }
    FAIL("no " << typeid(Exception).name() << " was thrown");
    throw std::logic_error("unreachable");
}

TopicPartition tp(const std::string& topic, int partition) {
    return {Topic{topic}, Partition{partition}};
}

}  // namespace

TEST_CASE("every produced record is consumed with its key, value, headers and timestamp") {
    exo::MockCluster cluster(3);
    const auto topic = unique_name("fields");
    cluster.create_topic(topic, 2);
    const auto before_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();

    std::vector<exo::OutgoingRecord> sent;
    for (int i = 0; i < 6; ++i) {
        auto r = outgoing(topic, i % 2, "value-" + std::to_string(i));
        r.key = "key-" + std::to_string(i);
        r.headers = {{"idempotency-key", "k-" + std::to_string(i)},
                     {"null-header", std::nullopt},
                     {"repeated", "first"},
                     {"repeated", "second"},
                     {"binary", std::string("a\0b", 3)}};
        sent.push_back(r);
    }
    auto bare = outgoing(topic, 1, "");  // no key, no headers, empty value
    sent.push_back(bare);
    {
        auto producer = make_producer(cluster.bootstrap_servers());
        for (const auto& r : sent) producer.produce(r);
        producer.flush(10s);
    }

    RecordingListener listener;
    KafkaConsumer consumer(
        consumer_options(cluster.bootstrap_servers(), unique_name("fields-group"), topic),
        listener);
    auto received = poll_until(consumer, [&](auto& all) { return all.size() >= sent.size(); });
    CHECK(received.size() == sent.size());
    CHECK(poll_for(consumer, 200ms).empty());

    // Within a partition, records arrive in production order from offset 0.
    std::map<int, std::vector<const exo::OutgoingRecord*>> by_partition;
    for (const auto& r : sent) by_partition[*r.partition].push_back(&r);
    std::map<int, std::int64_t> next_offset;
    for (const auto& got : received) {
        INFO("record " << got.topic_partition() << " @" << got.offset.value);
        CHECK(got.topic.value == topic);
        const auto& expected_list = by_partition.at(got.partition.value);
        const auto index = next_offset[got.partition.value]++;
        CHECK(got.offset.value == index);
        REQUIRE(index < static_cast<std::int64_t>(expected_list.size()));
        const auto& expected = *expected_list[static_cast<std::size_t>(index)];
        CHECK(got.key == expected.key);
        CHECK(got.value == expected.value);
        REQUIRE(got.headers.size() == expected.headers.size());
        for (std::size_t h = 0; h < expected.headers.size(); ++h) {
            CHECK(got.headers[h].name == expected.headers[h].name);
            CHECK(got.headers[h].value == expected.headers[h].value);
        }
        CHECK(got.timestamp_ms >= before_ms - 1000);
        CHECK(got.timestamp_ms <= before_ms + 60000);
    }
    const auto& with_headers =
        *std::find_if(received.begin(), received.end(), [](auto& r) { return !r.headers.empty(); });
    REQUIRE(with_headers.header("null-header") != nullptr);
    CHECK_FALSE(with_headers.header("null-header")->value.has_value());
    CHECK(with_headers.header("repeated")->value == "first");

    CHECK(listener.assigned == std::set<TopicPartition>{tp(topic, 0), tp(topic, 1)});
    consumer.close();
    CHECK(listener.assigned.empty());
    REQUIRE(listener.revocations.size() == 1);
    CHECK_FALSE(listener.revocations[0].second);
    consumer.close();  // idempotent
}

TEST_CASE(
    "committed offsets are reported by committed() and a later member of the group resumes "
    "from them") {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("commit");
    const auto group = unique_name("commit-group");
    cluster.create_topic(topic, 1);
    {
        auto producer = make_producer(cluster.bootstrap_servers());
        for (int i = 0; i < 5; ++i) producer.produce(outgoing(topic, 0, std::to_string(i)));
        producer.flush(10s);
    }
    const auto partition = tp(topic, 0);

    {
        RecordingListener listener;
        KafkaConsumer first(consumer_options(cluster.bootstrap_servers(), group, topic), listener);
        CHECK(first.committed({partition}, 5s).at(0).next.value == RD_KAFKA_OFFSET_INVALID);
        auto received = poll_until(first, [](auto& all) { return all.size() >= 5; });

        // An asynchronous commit lands too; its outcome is served by later polls.
        first.commit({{partition, Offset{1}}}, false);
        const auto async_deadline = std::chrono::steady_clock::now() + 5s;
        while (first.committed({partition}, 5s).at(0).next.value != 1) {
            REQUIRE(std::chrono::steady_clock::now() < async_deadline);
            CHECK(first.poll(10, 50ms).empty());
        }

        first.commit({{partition, Offset{2}}}, true);
        auto committed = first.committed({partition}, 5s);
        REQUIRE(committed.size() == 1);
        CHECK(committed[0].partition == partition);
        CHECK(committed[0].next.value == 2);
        first.commit({}, true);  // nothing to commit: a no-op, not an error

        // A per-partition commit error throws KafkaError and changes nothing.
        cluster.push_request_errors(kApiOffsetCommit, 1,
                                    RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
        auto error = caught<exo::KafkaError>([&] { first.commit({{partition, Offset{4}}}, true); });
        CHECK(error.code() == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
        CHECK_FALSE(error.retriable());
        CHECK(std::string(error.what()).find(topic) != std::string::npos);
        CHECK(first.committed({partition}, 5s).at(0).next.value == 2);

        // The pipeline's revoke path: a synchronous commit inside on_revoked.
        listener.before_revoke = [&](const std::vector<TopicPartition>& revoked, bool lost) {
            CHECK_FALSE(lost);
            CHECK(revoked == std::vector<TopicPartition>{partition});
            first.commit({{partition, Offset{3}}}, true);
        };
        first.close();
        REQUIRE(listener.revocations.size() == 1);
    }

    RecordingListener listener;
    KafkaConsumer second(consumer_options(cluster.bootstrap_servers(), group, topic), listener);
    auto received = poll_until(second, [](auto& all) { return all.size() >= 2; });
    REQUIRE(received.size() == 2);
    CHECK(received[0].offset.value == 3);
    CHECK(received[0].value == "3");
    CHECK(received[1].offset.value == 4);
    CHECK(poll_for(second, 200ms).empty());
}

// What the three-node chaos run met (docs/kafka.md): after a partition leader's kill -9,
// librdkafka 2.0.2's idempotent producer can find its sequence numbers and the broker's
// disagree (OUT_OF_ORDER_SEQUENCE_NUMBER) and declare itself failed for good. The mock
// cluster answers a produce with that error here. The records of the failed client are
// reported failed (flush throws), and the next produce goes through a new client.
TEST_CASE(
    "a producer librdkafka declared failed for good is replaced at the next produce, which is "
    "delivered") {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("fatal");
    cluster.create_topic(topic, 1);
    auto producer = make_producer(cluster.bootstrap_servers());
    producer.produce(outgoing(topic, 0, "before"));
    producer.flush(10s);

    cluster.push_request_errors(kApiProduce, 1, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    producer.produce(outgoing(topic, 0, "refused"));
    CHECK_THROWS_AS(producer.flush(10s), exo::KafkaError);
    CHECK(producer.renewals() == 0);

    // Produced again, as every caller does with a record whose delivery failed.
    producer.produce(outgoing(topic, 0, "refused"));
    producer.produce(outgoing(topic, 0, "after"));
    producer.flush(10s);
    CHECK(producer.renewals() == 1);

    RecordingListener listener;
    KafkaConsumer consumer(
        consumer_options(cluster.bootstrap_servers(), unique_name("fatal-group"), topic), listener);
    auto received = poll_until(consumer, [](auto& all) {
        return std::any_of(all.begin(), all.end(),
                           [](const Record& r) { return r.value == "after"; });
    });
    std::vector<std::string> values;
    for (const auto& r : received) values.push_back(r.value);
    CHECK(std::count(values.begin(), values.end(), "before") == 1);
    CHECK(std::count(values.begin(), values.end(), "refused") >= 1);
    CHECK(values.back() == "after");
}

TEST_CASE(
    "a paused partition delivers nothing until it is resumed, then continues without gaps or "
    "repeats") {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("pause");
    cluster.create_topic(topic, 2);
    auto producer = make_producer(cluster.bootstrap_servers());
    auto produce_three = [&](int first) {
        for (int i = first; i < first + 3; ++i) {
            producer.produce(outgoing(topic, 0, "p0-" + std::to_string(i)));
            producer.produce(outgoing(topic, 1, "p1-" + std::to_string(i)));
        }
        producer.flush(10s);
    };
    auto offsets_in = [](const std::vector<Record>& records, int partition) {
        std::vector<std::int64_t> offsets;
        for (const auto& r : records)
            if (r.partition.value == partition) offsets.push_back(r.offset.value);
        return offsets;
    };
    using Offsets = std::vector<std::int64_t>;

    RecordingListener listener;
    KafkaConsumer consumer(
        consumer_options(cluster.bootstrap_servers(), unique_name("pause-group"), topic), listener);
    // Paused from inside on_assigned, as the pipeline does while a dependency is down.
    // librdkafka 2.0.2 can lose a pause racing the assignment's fetch start (#2190);
    // run the test many times to see the consumer cover for it.
    listener.after_assign = [&](const std::vector<TopicPartition>&) {
        consumer.pause({tp(topic, 0)});
    };
    poll_until(consumer, [&](auto&) { return listener.assigned.size() == 2; });
    produce_three(0);
    auto while_paused = poll_until(consumer, [](auto& all) { return count_in(all, 1) >= 3; });
    for (auto& r : poll_for(consumer, 500ms)) while_paused.push_back(std::move(r));
    CHECK(offsets_in(while_paused, 0).empty());
    CHECK(offsets_in(while_paused, 1) == Offsets{0, 1, 2});

    consumer.resume({tp(topic, 0)});
    auto after_resume = poll_until(consumer, [](auto& all) { return count_in(all, 0) >= 3; });
    for (auto& r : poll_for(consumer, 300ms)) after_resume.push_back(std::move(r));
    CHECK(offsets_in(after_resume, 0) == Offsets{0, 1, 2});
    CHECK(offsets_in(after_resume, 1).empty());

    // A partition that is already fetching is paused in librdkafka at once.
    consumer.pause({tp(topic, 1)});
    produce_three(3);
    auto second_pause = poll_until(consumer, [](auto& all) { return count_in(all, 0) >= 3; });
    for (auto& r : poll_for(consumer, 500ms)) second_pause.push_back(std::move(r));
    CHECK(offsets_in(second_pause, 0) == Offsets{3, 4, 5});
    CHECK(offsets_in(second_pause, 1).empty());

    consumer.resume({tp(topic, 1)});
    auto second_resume = poll_until(consumer, [](auto& all) { return count_in(all, 1) >= 3; });
    for (auto& r : poll_for(consumer, 300ms)) second_resume.push_back(std::move(r));
    CHECK(offsets_in(second_resume, 1) == Offsets{3, 4, 5});
    CHECK(offsets_in(second_resume, 0).empty());
}

TEST_CASE(
    "pausing and resuming every partition over and over, also with nothing polled in between, "
    "delivers each record once and in order") {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("pause-cycles");
    cluster.create_topic(topic, 2);
    constexpr int kPerPartition = 400;
    {
        auto producer = make_producer(cluster.bootstrap_servers());
        for (int i = 0; i < kPerPartition; ++i)
            for (int p = 0; p < 2; ++p) producer.produce(outgoing(topic, p, std::to_string(i)));
        producer.flush(10s);
    }
    RecordingListener listener;
    KafkaConsumer consumer(
        consumer_options(cluster.bootstrap_servers(), unique_name("cycles-group"), topic),
        listener);
    const std::vector<TopicPartition> both{tp(topic, 0), tp(topic, 1)};

    // Small polls, so each pause throws away records librdkafka had fetched ahead;
    // every resume seeks to wake the fetcher (KafkaConsumer::wake_fetcher), and every
    // other one is followed by a pause and a resume with no record polled between.
    std::vector<Record> all;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (int cycle = 0; all.size() < 2 * kPerPartition; ++cycle) {
        REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                        "gave up after " << cycle << " cycles with " << all.size() << " records");
        for (auto& r : consumer.poll(37, 100ms)) all.push_back(std::move(r));
        if (listener.assigned.size() < 2) continue;
        consumer.pause(both);
        consumer.resume(both);
        if (cycle % 2 == 0) {
            consumer.pause(both);
            consumer.resume(both);
        }
    }
    for (auto& r : poll_for(consumer, 300ms)) all.push_back(std::move(r));
    for (int p = 0; p < 2; ++p) {
        CAPTURE(p);
        std::vector<std::int64_t> offsets;
        for (const auto& r : all)
            if (r.partition.value == p) offsets.push_back(r.offset.value);
        std::vector<std::int64_t> expected(kPerPartition);
        std::iota(expected.begin(), expected.end(), 0);
        CHECK(offsets == expected);
    }
}

// Serial: it times the refetch, so it runs with no shard beside it.
TEST_CASE(
    "resuming partitions that were all paused fetches again at once, not at the broker "
    "thread's next idle tick a second away" *
    doctest::test_suite("serial")) {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("resume-wake");
    cluster.create_topic(topic, 2);
    auto producer = make_producer(cluster.bootstrap_servers(), {{"linger.ms", "0"}});
    auto produce_one_each = [&](int n) {
        for (int p = 0; p < 2; ++p) producer.produce(outgoing(topic, p, std::to_string(n)));
        producer.flush(10s);
    };
    RecordingListener listener;
    KafkaConsumer consumer(
        consumer_options(cluster.bootstrap_servers(), unique_name("wake-group"), topic), listener);
    const std::vector<TopicPartition> both{tp(topic, 0), tp(topic, 1)};
    produce_one_each(0);
    poll_until(consumer, [](auto& all) { return all.size() >= 2; });  // both fetching

    // librdkafka 2.0.2 alone: the first record 0-1000 ms after the resume (about
    // 585 ms on average), whenever the idle broker thread next wakes.
    std::vector<std::chrono::milliseconds> delays;
    for (int cycle = 1; cycle <= 12; ++cycle) {
        consumer.pause(both);
        produce_one_each(cycle);
        CHECK(poll_for(consumer, 100ms).empty());
        const auto resumed = std::chrono::steady_clock::now();
        consumer.resume(both);
        // Both of this cycle's records, so none is left over for the next one.
        std::size_t got = 0;
        while (got < 2) {
            auto records = consumer.poll(10, 5ms);
            if (got == 0 && !records.empty())
                delays.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - resumed));
            got += records.size();
            REQUIRE(std::chrono::steady_clock::now() - resumed < 10s);
        }
    }
    std::sort(delays.begin(), delays.end());
    std::string all;
    for (auto d : delays) all += std::to_string(d.count()) + " ms ";
    CAPTURE(all);
    // The median of 12 uniform draws over a second is below 250 ms about once in
    // 70 runs; with the wake-up a resume is served within milliseconds.
    CHECK(delays[delays.size() / 2] < 250ms);
}

TEST_CASE("flushing records that cannot be delivered throws KafkaError") {
    SUBCASE("when no broker is listening") {
        std::string dead_bootstrap;
        {
            exo::MockCluster gone(1);
            dead_bootstrap = gone.bootstrap_servers();
        }
        auto producer = make_producer(dead_bootstrap, {{"message.timeout.ms", "1500"}});
        producer.produce(outgoing("nowhere", 0, "lost"));
        auto timeout = caught<exo::KafkaError>([&] { producer.flush(200ms); });
        CHECK(timeout.code() == RD_KAFKA_RESP_ERR__TIMED_OUT);
        CHECK(timeout.retriable());
        auto failed = caught<exo::KafkaError>([&] { producer.flush(10s); });
        CHECK(failed.code() == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
        CHECK(std::string(failed.what()).find("nowhere") != std::string::npos);
        producer.flush(1s);  // the failure was reported once; nothing is left
    }
    SUBCASE("when the broker goes down") {
        exo::MockCluster cluster(1);
        const auto topic = unique_name("down");
        cluster.create_topic(topic, 1);
        auto producer =
            make_producer(cluster.bootstrap_servers(), {{"message.timeout.ms", "1500"}});
        producer.produce(outgoing(topic, 0, "delivered"));
        producer.flush(10s);
        cluster.set_broker_down(1);
        producer.produce(outgoing(topic, 0, "lost"));
        CHECK_THROWS_AS(producer.flush(10s), exo::KafkaError);
        cluster.set_broker_up(1);
    }
}

TEST_CASE(
    "a cooperative-sticky member gets partitions incrementally, gives up only some and keeps the "
    "others paused") {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("coop");
    const auto group = unique_name("coop-group");
    cluster.create_topic(topic, 4);
    // Each incremental round waits session.timeout.ms less 1 s for the members: 3 s
    // instead of 6 (still 6 heartbeats wide).
    const std::map<std::string, std::string> cooperative = {
        {"partition.assignment.strategy", "cooperative-sticky"}, {"session.timeout.ms", "3000"}};
    auto producer = make_producer(cluster.bootstrap_servers());
    auto produce_one_each = [&](const std::string& value) {
        for (int p = 0; p < 4; ++p) producer.produce(outgoing(topic, p, value));
        producer.flush(10s);
    };
    const std::vector<TopicPartition> all = {tp(topic, 0), tp(topic, 1), tp(topic, 2),
                                             tp(topic, 3)};

    RecordingListener first_listener;
    KafkaConsumer first(consumer_options(cluster.bootstrap_servers(), group, topic, cooperative),
                        first_listener);
    produce_one_each("a");
    CHECK(poll_until(first, [](auto& got) { return got.size() >= 4; }).size() == 4);
    CHECK(first_listener.assigned == std::set<TopicPartition>(all.begin(), all.end()));
    CHECK(first_listener.revocations.empty());
    first.pause(all);  // every partition is fetching: paused in librdkafka at once

    // A second member: the first hands over two partitions and keeps two, still paused.
    RecordingListener second_listener;
    KafkaConsumer second(consumer_options(cluster.bootstrap_servers(), group, topic, cooperative),
                         second_listener);
    std::vector<Record> got_first, got_second;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (second_listener.assigned.size() != 2 || first_listener.assigned.size() != 2) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        for (auto& r : first.poll(10, 50ms)) got_first.push_back(std::move(r));
        for (auto& r : second.poll(10, 50ms)) got_second.push_back(std::move(r));
    }
    REQUIRE(first_listener.revocations.size() == 1);
    CHECK(first_listener.revocations[0].first.size() == 2);
    CHECK_FALSE(first_listener.revocations[0].second);
    for (const auto& p : second_listener.assigned) CHECK(first_listener.assigned.count(p) == 0);

    // Nothing was committed, so the second member reads its partitions from the start.
    produce_one_each("b");
    const auto consume_deadline = std::chrono::steady_clock::now() + 20s;
    while (got_second.size() < 4) {
        REQUIRE(std::chrono::steady_clock::now() < consume_deadline);
        for (auto& r : first.poll(10, 50ms)) got_first.push_back(std::move(r));
        for (auto& r : second.poll(10, 50ms)) got_second.push_back(std::move(r));
    }
    for (auto& r : poll_for(first, 300ms)) got_first.push_back(std::move(r));
    CHECK(got_first.empty());  // its two partitions are still paused
    for (const auto& r : got_second)
        CHECK(second_listener.assigned.count(r.topic_partition()) == 1);

    const std::vector<TopicPartition> kept(first_listener.assigned.begin(),
                                           first_listener.assigned.end());
    first.resume(kept);
    got_first = poll_until(first, [](auto& got) { return got.size() >= 2; });
    for (auto& r : poll_for(first, 300ms)) got_first.push_back(std::move(r));
    REQUIRE(got_first.size() == 2);
    for (const auto& r : got_first) {
        CHECK(first_listener.assigned.count(r.topic_partition()) == 1);
        CHECK(r.value == "b");
        CHECK(r.offset.value == 1);
    }

    second.close();
    first.close();
    CHECK(first_listener.assigned.empty());
    CHECK(second_listener.assigned.empty());
}

TEST_CASE("an exception from the listener surfaces from poll and the consumer must be replaced") {
    exo::MockCluster cluster(1);
    const auto topic = unique_name("throwing");
    cluster.create_topic(topic, 1);
    RecordingListener listener;
    listener.after_assign = [](const std::vector<TopicPartition>&) {
        throw std::runtime_error("listener failed");
    };
    KafkaConsumer consumer(
        consumer_options(cluster.bootstrap_servers(), unique_name("throwing-group"), topic),
        listener);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    auto error = caught<std::runtime_error>([&] {
        while (std::chrono::steady_clock::now() < deadline) consumer.poll(10, 100ms);
    });
    CHECK(std::string(error.what()) == "listener failed");
    // The assignment itself went through, so the close revokes it.
    CHECK(listener.assigned.size() == 1);
    CHECK_THROWS_AS(consumer.poll(10, 10ms), exo::KafkaError);
    consumer.close();
    CHECK(listener.assigned.empty());
}

TEST_CASE("exo mock-kafka publishes its bootstrap servers in a file until it is stopped") {
    const auto file = (std::filesystem::temp_directory_path() / unique_name("bootstrap")).string();
    const auto topic = unique_name("cli");
    std::stop_source stop;
    std::future<int> exit_code = std::async(std::launch::async, [&] {
        return exo::run_mock_kafka(2, {{topic, 3}}, file, stop.get_token());
    });
    std::string bootstrap;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (bootstrap.empty()) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(20ms);
        std::ifstream in(file);
        std::getline(in, bootstrap);
    }
    CHECK(bootstrap.find("127.0.0.1:") == 0);
    CHECK(std::count(bootstrap.begin(), bootstrap.end(), ',') == 1);  // two brokers

    {
        auto producer = make_producer(bootstrap);
        producer.produce(outgoing(topic, 2, "reaches the third partition"));
        producer.flush(10s);
    }
    CHECK(exit_code.wait_for(0s) == std::future_status::timeout);
    stop.request_stop();
    REQUIRE(exit_code.wait_for(10s) == std::future_status::ready);
    CHECK(exit_code.get() == 0);
    CHECK_FALSE(std::filesystem::exists(file));
}
