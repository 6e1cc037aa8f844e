// docs/design.md#failure-matrix, one test per row, against real Redis, PostgreSQL and a
// mock Kafka cluster over TCP. Outage tests stop and restart the servers of
// scripts/services.sh on their ports.
#include <doctest/doctest.h>

#include <fstream>
#include <pqxx/pqxx>

#include "child_process.hpp"
#include "kafka/consumer.hpp"
#include "kafka/group_progress.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::eventually;
using exo::testing::header;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::read_topic;
using exo::testing::RunningDaemon;
using exo::testing::wait_until;

namespace {

// Kafka protocol API keys (rdkafka_proto.h is not installed with the headers).
constexpr int kApiProduce = 0;
constexpr int kApiFetch = 1;
constexpr int kApiOffsetCommit = 8;

std::pair<std::vector<exo::PaymentMessage>, std::vector<exo::PaymentMessage>> halves(
    const exo::PaymentWorkload& w) {
    auto mid = w.messages.begin() + static_cast<long>(w.messages.size() / 2);
    return {{w.messages.begin(), mid}, {mid, w.messages.end()}};
}

}  // namespace

TEST_CASE(
    "a key held by a live worker in a slow handler is NACKed by the other daemon, which "
    "later sees it as a duplicate, and neither leaves the group") {
    PipelineHarness h({.name = "nack",
                       .partitions = 2,
                       .lease = 1000ms,
                       .handler = "misbehaving_ledger",
                       .slow_for = 5500ms,
                       .session_timeout = 4000ms,
                       .concurrency = 1});
    // Shorter than the slow handler: had it blocked polling, its member would leave the
    // group. It may not be below session.timeout.ms, shortened with it (8 heartbeats).
    h.mutable_config().kafka.properties["max.poll.interval.ms"] = "4500";
    RunningDaemon a(h.config(), h.registry(), h.bootstrap());
    RunningDaemon b(h.config(), h.registry(), h.bootstrap());
    // Both members assigned and the rebalance over (the second join may rebalance the
    // first): each holds exactly the partitions of its last assignment.
    auto assignments = [&] {
        const auto held = [](const RunningDaemon& d) {
            return static_cast<long>(d.stats().assignments - d.stats().revocations);
        };
        return std::to_string(held(a)) + " and " + std::to_string(held(b));
    };
    wait_until(
        "each member to hold one assignment, and to be ready", 30s, assignments,
        [&](const std::string& held) { return held == "1 and 1" && a.ready() && b.ready(); });
    auto revocations_before = a.stats().revocations + b.stats().revocations;

    h.produce({payment("slow-1", "acc-1", 70, 1, 0), payment("slow-1", "acc-1", 70, 1, 1)});
    REQUIRE(h.wait_until_consumed(60s));
    CHECK(a.stats().revocations + b.stats().revocations == revocations_before);
    a.stop();
    b.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 70}});
    CHECK(a.stats().applied + b.stats().applied == 1);
    CHECK(a.stats().duplicates() + b.stats().duplicates() == 1);
    CHECK(a.stats().conflicts + b.stats().conflicts >= 1);
    // The slow handler outlived its lease several times and was never taken over.
    CHECK(a.stats().lease_renewals + b.stats().lease_renewals >= 3);
    CHECK(a.stats().leases_lost + b.stats().leases_lost == 0);
}

TEST_CASE(
    "a batch still running when a revoke's drain deadline passes stops renewing its claims, "
    "so the new owner takes them over after one lease; PostgreSQL keeps it exactly once") {
    PipelineHarness h({.name = "abandon",
                       .partitions = 1,
                       .lease = 1000ms,
                       .handler = "misbehaving_ledger",
                       .slow_for = 8000ms,
                       .session_timeout = 3000ms,
                       .concurrency = 1});
    h.mutable_config().pipeline.shutdown_timeout = 500ms;
    RunningDaemon a(h.config(), h.registry(), h.bootstrap());
    wait_until(
        "the first member to be ready", 30s, [&] { return a.ready(); }, [](bool r) { return r; });
    h.produce({payment("slow-1", "acc-1", 70, 1, 0)});
    // In the slow handler: its claim renewed every third of the lease.
    wait_until(
        "the slow batch to renew its claim", 30s, [&] { return a.stats().lease_renewals.load(); },
        [](std::uint64_t n) { return n >= 2; });

    RunningDaemon b(h.config(), h.registry(), h.bootstrap());
    wait_until(
        "the first member to give its partition up", 30s,
        [&] { return a.stats().revocations.load(); }, [](std::uint64_t n) { return n >= 1; });
    // Past the 500 ms drain deadline (the revoke counted when it began) and one more
    // renewal period, the claim is abandoned: no renewal may follow. Watching for 2 s
    // (6 renewal periods) of the 8 s handler is enough to see one if it came.
    std::this_thread::sleep_for(1000ms);
    const auto abandoned_at = a.stats().lease_renewals.load();
    std::this_thread::sleep_for(2000ms);
    CHECK(a.stats().lease_renewals.load() == abandoned_at);

    REQUIRE(h.wait_until_consumed(60s));
    a.stop();
    b.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 70}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 1);
}

TEST_CASE(
    "a worker frozen past its lease is taken over, and when it wakes its commit loses on "
    "the dedup row") {
    PipelineHarness h({.name = "frozen",
                       .partitions = 1,
                       .lease = 1000ms,
                       .session_timeout = 3000ms,
                       .concurrency = 1});
    h.produce({payment("f-1", "acc-1", 1, 1), payment("f-2", "acc-1", 10, 2),
               payment("f-3", "acc-1", 100, 3)});
    auto config_file = "/tmp/" + h.schema() + ".yaml";
    auto log_file = "/tmp/" + h.schema() + ".log";
    std::ofstream(config_file) << h.config_yaml();
    exo::testing::ChildProcess child(exo::testing::exo_binary(), {"run", "--config", config_file},
                                     {{"EXO_FAILPOINTS", "after_claim=stop"}}, log_file);
    REQUIRE(eventually([&] { return child.stopped(); }, 30s));

    {
        // The group drops the frozen member after session.timeout.ms; this
        // daemon takes the partition and the expired claims.
        RunningDaemon other(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(60s));
        other.stop();
        CHECK(other.stats().applied == 3);
    }
    child.signal(SIGCONT);
    // Woken, the frozen worker runs its transaction: every dedup row exists. SIGTERM
    // right away: the shutdown drains, so the batch in progress still runs to its end
    // (and the summary line checked below counts what its commit lost).
    child.signal(SIGTERM);
    auto status = child.wait(30s);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 111}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    std::ifstream in(log_file);
    std::string log((std::istreambuf_iterator<char>(in)), {});
    CHECK(log.find("postgres=3") != std::string::npos);  // all three lost on the dedup row
}

TEST_CASE("a retryable handler failure is retried and succeeds on attempt 3") {
    PipelineHarness h({.name = "retry", .partitions = 1, .handler = "misbehaving_ledger"});
    h.produce({payment("flaky-1", "acc-1", 5, 1), payment("ok-2", "acc-1", 6, 2)});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 11}});
    CHECK(d.stats().retries == 2);
    CHECK(d.stats().applied == 2);
    CHECK(d.stats().dead_lettered == 0);
}

TEST_CASE(
    "a permanent failure is dead-lettered at once with its headers and the records behind "
    "it still apply") {
    PipelineHarness h({.name = "poison", .partitions = 1, .handler = "misbehaving_ledger"});
    h.produce({payment("poison-1", "acc-1", 5, 1), payment("ok-2", "acc-2", 6, 1),
               payment("flaky-3", "acc-3", 7, 1)});
    h.mutable_config().bindings[0].max_attempts = 2;  // flaky-3 needs 3: it gives up
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-2", 6}});
    CHECK(d.stats().dead_lettered == 2);

    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 2);
    REQUIRE(dlq.size() == 2);
    CHECK(header(dlq[0], "exo-error") == "poison record refused");
    CHECK(header(dlq[0], "exo-attempts") == "1");
    CHECK(header(dlq[0], "exo-idempotency-key") == "poison-1");
    CHECK(header(dlq[0], "exo-original-offset") == "0");
    CHECK(header(dlq[1], "exo-error").find("gave up after 2 attempts") != std::string::npos);
    CHECK(header(dlq[1], "exo-attempts") == "2");
    // Dead letters are durable outcomes: a redelivery is not dead-lettered twice.
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE outcome = 'DEAD_LETTERED'") == 2);
}

TEST_CASE(
    "a handler statement failing through exec() rolls back alone and its record is "
    "dead-lettered while the rest of its batch applies") {
    PipelineHarness h({.name = "exec_fail", .partitions = 1, .handler = "misbehaving_ledger"});
    h.produce({payment("ok-1", "acc-1", 1, 1), payment("divzero-2", "acc-2", 5, 1),
               payment("ok-3", "acc-3", 7, 1)});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 1}, {"acc-3", 7}});
    CHECK(d.stats().dead_lettered == 1);  // division by zero is a data error: permanent
    CHECK(d.stats().batch_failures == 0);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-error").find("division by zero") != std::string::npos);
}

TEST_CASE(
    "a transaction cancelled in its COMMIT round trip (57014) is rolled back, so the slot's "
    "next transactions begin and apply: nothing is counted or dead-lettered") {
    PipelineHarness h({.name = "commit_cancel", .partitions = 1, .concurrency = 1});
    // The first COMMIT fails on the server as a cancel does, in the statement sent with
    // it: COMMIT is skipped. Before, no ROLLBACK followed and every later BEGIN on the
    // session failed with 25P02: counted, dead-lettered, then the partition stalled.
    RunningDaemon d(h.config(), h.registry(), h.bootstrap(), "pg_commit_probe=cancel@1");
    h.produce({payment("cancel-1", "acc-1", 1, 1), payment("cancel-2", "acc-2", 2, 1)});
    REQUIRE(h.wait_until_consumed(60s));
    h.produce({payment("cancel-3", "acc-1", 4, 2)});  // a later batch on the same slot
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 5}, {"acc-2", 2}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(d.stats().applied == 3);
    CHECK(d.stats().dead_lettered == 0);
    CHECK(d.stats().batch_failures == 0);
}

TEST_CASE("a dead letter that Kafka refuses is kept and retried, never skipped") {
    PipelineHarness h({.name = "dlq_fail", .partitions = 1, .handler = "misbehaving_ledger"});
    h.produce({payment("poison-1", "acc-1", 5, 1), payment("ok-2", "acc-2", 6, 1)});
    // The daemon's first produce requests (its dead letters) are refused. Each refusal
    // makes the producer wait for a metadata refresh (about 1 s) before the next request,
    // and fails every try of the dead letter meanwhile: two already stall the partition.
    h.cluster().push_request_errors(kApiProduce, 2, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(eventually([&] { return d.stats().dead_letter_failures > 0; }, 60s));
    // Refused: the record is not finished, so no offset moves past it.
    CHECK(d.stats().dead_lettered == 0);
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(d.stats().dead_lettered == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() >= 1);
    CHECK(header(dlq[0], "exo-idempotency-key") == "poison-1");
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-2", 6}});
}

TEST_CASE("in strict mode a gap that is never filled is dead-lettered after gap_timeout") {
    PipelineHarness h({.name = "gap", .partitions = 1, .gap_timeout = 1500ms});
    h.produce({payment("g-2", "acc-1", 5, 2), payment("h-1", "acc-2", 9, 1)});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));
    d.stop();
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-2", 9}});
    CHECK(d.stats().dead_lettered == 1);
    auto dlq = read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(dlq.size() == 1);
    CHECK(header(dlq[0], "exo-error").find("sequence gap") != std::string::npos);
    // The event itself was not judged: a later copy of g-2 may still apply.
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE idempotency_key = 'g-2'") == 0);
}

// The outage tests' common shape: the first half of `w` is consumed, `server`
// (redis or postgres) is stopped, the second half produced while it is down,
// `while_down` checks what the daemon does meanwhile, then the server returns
// and everything must be consumed.
template <class WhileDown>
void through_outage(PipelineHarness& h, const exo::PaymentWorkload& w, const std::string& server,
                    WhileDown while_down) {
    auto [first, second] = halves(w);
    h.produce(first);
    REQUIRE(h.wait_until_consumed(60s));
    exo::testing::services(server + "-stop");
    h.produce(second);
    while_down();
    exo::testing::services(server + "-start");
    REQUIRE(h.wait_until_consumed(90s));
}

// Serial (scripts/integration.sh): it stops and restarts Redis.
TEST_CASE(
    "with Redis stopped mid-run the pause policy stalls, then completes exactly once after "
    "Redis returns" *
    doctest::test_suite("serial")) {
    PipelineHarness h({.name = "redis_pause"});
    auto w = exo::generate_payments(
        {.count = 1500, .accounts = 30, .duplicate_ratio = 0.2, .partitions = 4, .seed = 21});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    through_outage(h, w, "redis", [&] {
        REQUIRE(eventually([&] { return !d.ready(); }, 30s));  // it noticed
        auto finished_while_down = d.stats().finished();
        // Proves nothing happens, so a bounded wait: a second is two of the longest
        // retry backoffs (500 ms) and five commit intervals.
        std::this_thread::sleep_for(1s);
        CHECK(d.stats().finished() == finished_while_down);  // stalled: no claims, no work
        CHECK_FALSE(d.ready());
        CHECK(exo::group_lag(h.bootstrap(), h.config().kafka.group_id, h.topic()) != 0);
    });
    d.stop();
    h.check_exactly_once(w);
}

// Serial (scripts/integration.sh): it stops and restarts Redis.
TEST_CASE(
    "with Redis stopped mid-run the postgres_only policy keeps going exactly once on the "
    "dedup row alone" *
    doctest::test_suite("serial")) {
    PipelineHarness h(
        {.name = "redis_pg_only", .on_redis_down = exo::RedisDownPolicy::postgres_only});
    auto w = exo::generate_payments(
        {.count = 1500, .accounts = 30, .duplicate_ratio = 0.2, .partitions = 4, .seed = 22});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    bool consumed_while_down = false;
    through_outage(h, w, "redis", [&] { consumed_while_down = h.wait_until_consumed(60s); });
    CHECK(consumed_while_down);
    d.stop();
    h.check_exactly_once(w);
    CHECK(d.stats().duplicates_postgres > 0);
}

// Serial (scripts/integration.sh): it stops and restarts PostgreSQL.
TEST_CASE(
    "with PostgreSQL stopped mid-run nothing is lost or doubled and no offset moves until "
    "it returns" *
    doctest::test_suite("serial")) {
    PipelineHarness h({.name = "pg_down"});
    auto w = exo::generate_payments(
        {.count = 1500, .accounts = 30, .duplicate_ratio = 0.2, .partitions = 4, .seed = 23});
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    through_outage(h, w, "postgres", [&] {
        REQUIRE(eventually([&] { return !d.ready(); }, 30s));  // it noticed
        // Proves no offset moves, so a bounded wait: five commit intervals (200 ms) and
        // two of the longest retry backoffs (500 ms).
        std::this_thread::sleep_for(1s);
        CHECK(exo::group_lag(h.bootstrap(), h.config().kafka.group_id, h.topic()) != 0);
        CHECK_FALSE(d.ready());
    });
    d.stop();
    h.check_exactly_once(w);
    CHECK(d.stats().batch_failures > 0);
}

TEST_CASE(
    "mock-cluster faults (a broker down, failing OffsetCommit and Fetch requests) still "
    "end exactly once with every offset committed") {
    PipelineHarness h({.name = "kafka_faults", .brokers = 3});
    auto w = exo::generate_payments(
        {.count = 2000, .accounts = 30, .duplicate_ratio = 0.15, .partitions = 4, .seed = 24});
    auto [first, second] = halves(w);
    RunningDaemon d(h.config(), h.registry(), h.bootstrap());
    h.produce(first);
    REQUIRE(eventually([&] { return d.stats().finished() > 0; }, 30s));
    h.cluster().push_request_errors(kApiOffsetCommit, 4, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
    h.cluster().push_request_errors(kApiFetch, 4, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
    h.cluster().set_broker_down(3);
    std::this_thread::sleep_for(2s);
    h.cluster().set_broker_up(3);
    h.produce(second);
    REQUIRE(h.wait_until_consumed(90s));
    d.stop();
    h.check_exactly_once(w);
}

static void rebalance_mid_stream(const std::string& assignor) {
    // Each join and leave is a rebalance, which waits session.timeout.ms less 1 s.
    PipelineHarness h(
        {.name = "rebalance", .partitions = 6, .session_timeout = 3000ms, .concurrency = 1});
    h.mutable_config().kafka.properties["partition.assignment.strategy"] = assignor;
    auto w = exo::generate_payments(
        {.count = 6000, .accounts = 80, .duplicate_ratio = 0.15, .partitions = 6, .seed = 25});
    auto third = static_cast<long>(w.messages.size() / 3);
    std::vector<exo::PaymentMessage> p1(w.messages.begin(), w.messages.begin() + third);
    std::vector<exo::PaymentMessage> p2(w.messages.begin() + third, w.messages.begin() + 2 * third);
    std::vector<exo::PaymentMessage> p3(w.messages.begin() + 2 * third, w.messages.end());

    auto a = std::make_unique<RunningDaemon>(h.config(), h.registry(), h.bootstrap());
    h.produce(p1);
    REQUIRE(eventually([&] { return a->stats().finished() > 0; }, 30s));
    RunningDaemon b(h.config(), h.registry(), h.bootstrap());  // joins mid-stream
    h.produce(p2);
    REQUIRE(eventually([&] { return b.stats().finished() > 0; }, 60s));
    a->stop();  // leaves mid-stream
    auto a_revocations = a->stats().revocations.load();
    a.reset();
    h.produce(p3);
    REQUIRE(h.wait_until_consumed(90s));
    b.stop();
    CHECK(a_revocations >= 1);
    h.check_exactly_once(w);
}

TEST_CASE("a daemon joining and another leaving mid-stream (eager assignor) keep exactly once") {
    rebalance_mid_stream("range");
}

TEST_CASE(
    "a daemon joining and another leaving mid-stream (cooperative-sticky) keep exactly "
    "once") {
    rebalance_mid_stream("cooperative-sticky");
}

TEST_CASE("SIGTERM drains, commits and exits 0 within the shutdown bound") {
    PipelineHarness h({.name = "sigterm", .partitions = 2, .concurrency = 1});
    auto w = exo::generate_payments({.count = 500, .accounts = 10, .partitions = 2, .seed = 26});
    h.produce(w);
    auto config_file = "/tmp/" + h.schema() + ".yaml";
    std::ofstream(config_file) << h.config_yaml();
    exo::testing::ChildProcess child(exo::testing::exo_binary(), {"run", "--config", config_file},
                                     {}, "/tmp/" + h.schema() + ".log");
    REQUIRE(h.wait_until_consumed(60s));
    auto started = std::chrono::steady_clock::now();
    child.signal(SIGTERM);
    auto status = child.wait(20s);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
    CHECK(std::chrono::steady_clock::now() - started < 15s);
    h.check_exactly_once(w);
}
