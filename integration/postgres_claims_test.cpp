// claim.store: postgres (docs/design.md#two-fences): exo without Redis, the dedup
// row the only fence, against real PostgreSQL and the mock Kafka. No Redis is
// reachable: the config's Redis address is a socket that only counts who
// connects to it, and every test ends with nobody having done so.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "dedup_rows.hpp"
#include "kafka/group_progress.hpp"
#include "operations_cli.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;

namespace {

// A loopback port that accepts TCP connections and never answers: where a
// Redis would be. connections() counts every connection made to it so far
// (the kernel completes the handshake; nobody reads).
class RedisTrap {
public:
    RedisTrap() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 512) == 0);
        socklen_t len = sizeof addr;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port_ = ntohs(addr.sin_port);
        REQUIRE(::fcntl(fd_, F_SETFL, O_NONBLOCK) == 0);
    }
    RedisTrap(const RedisTrap&) = delete;
    RedisTrap& operator=(const RedisTrap&) = delete;
    ~RedisTrap() { ::close(fd_); }

    int port() const { return port_; }
    int connections() {
        for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0;) {
            ::close(c);
            ++accepted_;
        }
        return accepted_;
    }

private:
    int fd_ = -1;
    int port_ = 0;
    int accepted_ = 0;
};

// The harness's config with claims in PostgreSQL and Redis pointed at `trap`.
exo::Config without_redis(const PipelineHarness& h, const RedisTrap& trap) {
    exo::Config config = h.config();
    config.claim.store = exo::ClaimConfig::Store::postgres;
    config.redis.host = "127.0.0.1";
    config.redis.port = trap.port();
    return config;
}

}  // namespace

TEST_CASE(
    "with claim.store postgres every payment is applied exactly once, every duplicate is "
    "answered by the dedup row, and the daemon is ready without ever connecting to Redis") {
    PipelineHarness h({.name = "pgclaim_e2e"});
    RedisTrap trap;
    auto workload = exo::generate_payments(
        {.count = 2000, .accounts = 40, .duplicate_ratio = 0.15, .partitions = 4, .seed = 23});
    REQUIRE(workload.duplicates > 200);
    h.produce(workload);

    const exo::Config config = without_redis(h, trap);  // the daemon keeps a reference
    RunningDaemon daemon(config, h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(90s));
    CHECK_MESSAGE(exo::testing::eventually([&] { return daemon.ready(); }, 10000ms),
                  "not ready without Redis");
    const auto status = daemon.status();
    CHECK_FALSE(status.redis_used);
    CHECK(status.postgres_up);
    daemon.stop();

    h.check_exactly_once(workload);
    const auto& s = daemon.stats();
    CHECK(s.applied == workload.unique_events);
    // A copy whose first copy is in the same batch is settled there (in_batch);
    // every other duplicate is answered by the dedup row.
    CHECK(s.duplicates_postgres + s.duplicates_in_batch == workload.duplicates);
    CHECK(s.duplicates_postgres > 0);
    CHECK(s.duplicates_redis == 0);
    CHECK(s.dead_lettered == 0);
    CHECK(s.lease_renewals == 0);
    CHECK(s.redis_round_trips == 0);
    // Every dedup row carries the postgres_only path's token.
    CHECK(h.count("SELECT count(*) FROM exo_processed WHERE fencing_token <> 0") == 0);
    CHECK(trap.connections() == 0);
}

TEST_CASE(
    "two daemons with claim.store postgres settle keys they hold at once on the dedup row and "
    "never apply a duplicate twice") {
    PipelineHarness h({.name = "pgclaim_two", .partitions = 6, .concurrency = 1});
    RedisTrap trap;
    // A third of the events repeat, in other partitions: the two members meet
    // the same keys at the same time, with no claim to keep them apart.
    auto workload = exo::generate_payments(
        {.count = 3000, .accounts = 60, .duplicate_ratio = 0.3, .partitions = 6, .seed = 29});
    const exo::Config config = without_redis(h, trap);
    RunningDaemon first(config, h.registry(), h.bootstrap());
    RunningDaemon second(config, h.registry(), h.bootstrap());
    h.produce(workload);
    REQUIRE(h.wait_until_consumed(120s));
    first.stop();
    second.stop();

    h.check_exactly_once(workload);
    CHECK(first.stats().applied + second.stats().applied == workload.unique_events);
    // A rebalance may redeliver what a member applied: never less than the duplicates.
    CHECK(first.stats().duplicates_postgres + second.stats().duplicates_postgres +
              first.stats().duplicates_in_batch + second.stats().duplicates_in_batch >=
          workload.duplicates);
    CHECK(first.stats().duplicates_redis + second.stats().duplicates_redis == 0);
    CHECK(first.stats().polled > 0);
    CHECK(second.stats().polled > 0);
    CHECK(trap.connections() == 0);
}

TEST_CASE(
    "with claim.store postgres a crash after the commit leaves a redelivery that the dedup row "
    "answers at once, and exo inspect says the claim store is postgres") {
    // The killed member is dropped after session.timeout.ms: 3 s instead of 6.
    PipelineHarness h(
        {.name = "pgclaim_crash", .partitions = 1, .session_timeout = 3000ms, .concurrency = 1});
    RedisTrap trap;
    h.mutable_config() = without_redis(h, trap);
    h.produce({payment("pc-1", "acc-1", 100, 1), payment("pc-2", "acc-1", 20, 2),
               payment("pc-3", "acc-1", 3, 3)});

    // The child's file has no redis section at all (it would be refused).
    const std::string config_file = exo::testing::ops::write_config(h);
    {
        std::ifstream in(config_file);
        const std::string yaml((std::istreambuf_iterator<char>(in)), {});
        REQUIRE(yaml.find("redis") == std::string::npos);
        REQUIRE(yaml.find("store: postgres") != std::string::npos);
    }
    const auto killed = exo::testing::ops::exo_cli({"run", "--config", config_file},
                                                   {{"EXO_FAILPOINTS", "after_pg_commit=kill"}});
    INFO(killed.output);
    REQUIRE(killed.signal == SIGKILL);
    const auto applied_before = h.count("SELECT count(*) FROM ledger_entries");
    REQUIRE(applied_before >= 1);
    CHECK(exo::group_lag(h.bootstrap(), h.config().kafka.group_id, h.topic()) != 0);

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();

    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 123}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries") == 3);
    CHECK(daemon.stats().duplicates_postgres == static_cast<std::uint64_t>(applied_before));
    CHECK(daemon.stats().applied == static_cast<std::uint64_t>(3 - applied_before));
    CHECK(trap.connections() == 0);

    auto inspected = exo::testing::ops::json_of(exo::testing::ops::exo_cli(
        {"inspect", "--config", config_file, "--key", "pc-1", "--json"}));
    CHECK(inspected["claim_store"] == "postgres");
    CHECK(inspected["row"]["outcome"] == "APPLIED");
    CHECK(inspected["claim"].is_null());
    CHECK(inspected["claim_error"].is_null());
}

TEST_CASE(
    "with claim.store postgres a key another transaction is applying waits on its dedup row: "
    "NACKed after lock_timeout while that transaction is open, a duplicate once it commits") {
    PipelineHarness h({.name = "pgclaim_lock", .partitions = 1, .with_sequence = false});
    RedisTrap trap;
    h.mutable_config() = without_redis(h, trap);
    h.mutable_config().postgres.lock_timeout = 300ms;
    // Another copy of the key in flight elsewhere (another daemon, with no claim
    // to keep this one off it): its transaction holds the dedup row.
    exo::testing::HeldDedupRow other(h, "held-1");
    h.produce({payment("held-1", "acc-1", 7, 1), payment("free-2", "acc-2", 2, 1)});

    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    CHECK(exo::testing::eventually([&] { return daemon.stats().conflicts >= 2; }, 30000ms));
    CHECK(daemon.stats().applied == 0);  // free-2 waits behind held-1 in its partition
    other.commit();
    REQUIRE(h.wait_until_consumed(60s));
    daemon.stop();

    // held-1 was the other copy's to apply: this daemon answered it from the row.
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-2", 2}});
    CHECK(daemon.stats().duplicates_postgres == 1);
    CHECK(daemon.stats().applied == 1);
    CHECK(daemon.stats().dead_lettered == 0);
    CHECK(trap.connections() == 0);
}

TEST_CASE(
    "with claim.store postgres exo dlq replay opens no Redis, and the replayed dead letter "
    "applies exactly once") {
    using namespace exo::testing::ops;
    PipelineHarness h({.name = "pgclaim_replay", .partitions = 1});
    RedisTrap trap;
    h.mutable_config() = without_redis(h, trap);
    h.produce({payment("ok-1", "acc-1", 50, 1), payment("big-2", "acc-2", 500, 1)});
    consume_refusing_large_payments(h);
    REQUIRE(outcome(h, "big-2") == "DEAD_LETTERED");

    // The file has no redis section: a replay that opened Redis would fail on
    // the default address, where nothing listens.
    const std::string config = write_config(h);
    const auto replayed =
        exo_cli({"dlq", "replay", "--config", config, "--key", "big-2", "--json"});
    INFO(replayed.output);
    REQUIRE(replayed.exit_code == 0);
    CHECK(json_of(replayed)[0]["status"] == "replayed");

    consume_fixed(h);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 50}, {"acc-2", 500}});
    CHECK(h.count("SELECT count(*) FROM ledger_entries WHERE event_id = 'big-2'") == 1);
    CHECK(outcome(h, "big-2") == "APPLIED");
    CHECK(trap.connections() == 0);
}
