// Claims on a real Redis Cluster (3 masters, 3 replicas on loopback, started by
// scripts/redis-cluster.sh for each case): the router (redis/redis_router.hpp)
// against real slots, exactly once through the whole pipeline, a master killed
// mid-run, and a slot migrated under the claims. Serial (scripts/integration.sh):
// each case starts six redis-server processes and kills some of them.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "operations_cli.hpp"
#include "ops/claim_view.hpp"
#include "pipeline_harness.hpp"
#include "redis/claim_store.hpp"
#include "redis/cluster_slots.hpp"
#include "redis/redis_router.hpp"
#include "runtime/sessions/redis_session.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;
using exo::testing::ops::exo_cli;
using exo::testing::ops::json;
using exo::testing::ops::json_of;
using exo::testing::ops::write_config;

namespace {

// scripts/redis-cluster.sh beside scripts/services.sh (EXO_SERVICES_SCRIPT).
std::string cluster_script() {
    std::string services = exo::testing::required_env("EXO_SERVICES_SCRIPT");
    return services.substr(0, services.rfind('/') + 1) + "redis-cluster.sh";
}

// Runs the cluster script; its output is shown only when it fails.
void cluster_script(const std::string& args, const std::string& log) {
    const std::string command = "bash '" + cluster_script() + "' " + args + " > '" + log + "' 2>&1";
    if (std::system(command.c_str()) == 0) return;
    std::ifstream in(log);
    std::string output((std::istreambuf_iterator<char>(in)), {});
    FAIL(command << " failed:\n" << output);
}

// A Redis Cluster of this test case's own, stopped (and its directory deleted) on destruction.
class TestCluster {
public:
    TestCluster() {
        char pattern[] = "/tmp/exo-redis-cluster-XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        dir_ = pattern;
        log_ = std::string(pattern) + ".log";
        cluster_script("start '" + dir_ + "'", log_);
        std::ifstream env(dir_ + "/cluster.env");
        std::string line;
        const std::string key = "export EXO_REDIS_CLUSTER_NODES=";
        while (std::getline(env, line)) {
            if (line.rfind(key, 0) != 0) continue;
            std::stringstream list(line.substr(key.size()));
            std::string node;
            while (std::getline(list, node, ','))
                if (auto hp = exo::parse_host_port(node)) nodes_.push_back(*hp);
        }
        REQUIRE(nodes_.size() == 6);
    }
    ~TestCluster() {
        const std::string command =
            "bash '" + cluster_script() + "' stop '" + dir_ + "' >> '" + log_ + "' 2>&1";
        if (std::system(command.c_str()) == 0) std::remove(log_.c_str());
    }
    TestCluster(const TestCluster&) = delete;
    TestCluster& operator=(const TestCluster&) = delete;

    const std::vector<exo::HostPort>& nodes() const { return nodes_; }
    void kill_node(const exo::HostPort& node) {
        cluster_script("kill-node '" + dir_ + "' " + std::to_string(node.port), log_);
    }
    // Waits until the live nodes agree on a slot map that serves every slot.
    void wait_ok() { cluster_script("wait-ok '" + dir_ + "' 60", log_); }
    exo::RedisOptions options_of(const exo::HostPort& node) const {
        exo::RedisOptions o;
        o.host = node.host;
        o.port = node.port;
        return o;
    }
    // The master of `slot` now, asked of any live node.
    exo::HostPort master_of(int slot) const {
        exo::RedisRouter router({}, nodes_);
        const exo::HostPort* m = router.slot_map().master(slot);
        REQUIRE(m != nullptr);
        return *m;
    }

private:
    std::string dir_;
    std::string log_;
    std::vector<exo::HostPort> nodes_;
};

// Keys of this prefix on `node` (a master's share of the claims).
long long keys_on(const TestCluster& cluster, const exo::HostPort& node,
                  const std::string& prefix) {
    exo::RedisConnection redis(cluster.options_of(node));
    long long n = 0;
    std::string cursor = "0";
    do {
        auto r = redis.command({"SCAN", cursor, "MATCH", prefix + ":*", "COUNT", "1000"});
        REQUIRE(r.type == exo::RedisReply::Type::array);
        cursor = r.elements[0].str;
        n += static_cast<long long>(r.elements[1].elements.size());
    } while (cursor != "0");
    return n;
}

std::vector<std::string> numbered_keys(const std::string& stem, int n) {
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back(stem + std::to_string(i));
    return keys;
}

// Until `daemon` has applied 500 records of `workload` and not all of them: mid-run.
void wait_until_mid_run(const RunningDaemon& daemon, const exo::PaymentWorkload& workload) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (daemon.stats().applied < 500 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    REQUIRE(daemon.stats().applied >= 500);
    REQUIRE(daemon.stats().applied < workload.unique_events);
}

}  // namespace

TEST_SUITE("serial") {
    TEST_CASE(
        "on a Redis Cluster a batch of claims spanning every master is one call per slot and "
        "answers like a single server") {
        TestCluster cluster;
        exo::RedisRouter router({}, cluster.nodes());
        REQUIRE(router.cluster());
        CHECK(router.slot_map().masters().size() == 3);
        CHECK(router.slot_map().covered() == exo::kClusterSlots);

        const std::string prefix = exo::testing::unique_name("cl");
        exo::ClaimStore a(router, prefix, "billing", "owner-a");
        exo::ClaimStore b(router, prefix, "billing", "owner-b");
        const auto keys = numbered_keys("order-", 1500);  // more than max_keys_per_call
        const auto claims = a.claim(keys, 10s);
        REQUIRE(claims.size() == keys.size());
        std::vector<exo::CompleteRequest> done;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            REQUIRE(claims[i].status == exo::ClaimStatus::acquired);
            done.push_back({keys[i], claims[i].token, "ok-" + keys[i]});
        }
        // Another owner is refused while the leases are live, on every shard.
        for (const auto& r : b.claim(keys, 10s)) CHECK(r.status == exo::ClaimStatus::conflict);
        for (auto s : a.complete(done, 60s)) CHECK(s == exo::FinishStatus::ok);
        const auto again = b.claim(keys, 10s);
        for (std::size_t i = 0; i < keys.size(); ++i) {
            CHECK(again[i].status == exo::ClaimStatus::duplicate);
            CHECK(again[i].stored_result == "ok-" + keys[i]);
        }
        // The keys are spread over every master, in cluster_buckets slots.
        std::set<int> slots;
        for (const auto& k : keys) slots.insert(exo::key_hash_slot(a.redis_key(k)));
        CHECK(slots.size() == static_cast<std::size_t>(exo::cluster_buckets));
        long long total = 0;
        for (const auto& master : router.slot_map().masters()) {
            const long long n = keys_on(cluster, master, prefix);
            CHECK(n > 0);
            total += n;
        }
        CHECK(total == 1500);
        // The lease keeper's extend and a release route the same way.
        std::vector<exo::TokenRequest> held;
        for (const auto& r : a.claim(numbered_keys("lease-", 300), 10s)) {
            REQUIRE(r.status == exo::ClaimStatus::acquired);
            held.push_back({"lease-" + std::to_string(held.size()), r.token});
        }
        for (auto s : a.extend(held, 20s)) CHECK(s == exo::FinishStatus::ok);
        for (auto s : a.release(held)) CHECK(s == exo::FinishStatus::ok);
        for (const auto& r : b.claim(numbered_keys("lease-", 300), 10s))
            CHECK(r.status == exo::ClaimStatus::acquired);
        // exo inspect's view routes the same way.
        auto view = exo::read_claim(router, a.redis_key("order-7"));
        REQUIRE(view);
        CHECK(view->state == "COMPLETED");
        CHECK(view->result == "ok-order-7");
    }

    TEST_CASE(
        "on a Redis Cluster a claim whose slot is being migrated follows ASK to the node that "
        "has its key, and MOVED once the slot has moved") {
        TestCluster cluster;
        exo::RedisRouter router({}, cluster.nodes());
        const std::string prefix = exo::testing::unique_name("ask");
        exo::ClaimStore a(router, prefix, "billing", "owner-a");
        exo::ClaimStore b(router, prefix, "billing", "owner-b");
        const auto first = a.claim({"done"}, 10s);
        REQUIRE(first[0].status == exo::ClaimStatus::acquired);
        REQUIRE(a.complete({{"done", first[0].token, "result-1"}}, 60s)[0] ==
                exo::FinishStatus::ok);
        // Another key of the same bucket, so of the same slot, not claimed yet.
        std::string fresh = "fresh-0";
        for (int i = 1; exo::claim_bucket(fresh) != exo::claim_bucket("done"); ++i)
            fresh = "fresh-" + std::to_string(i);

        const std::string key = a.redis_key("done");
        const int slot = exo::key_hash_slot(key);
        const exo::HostPort source = cluster.master_of(slot);
        exo::HostPort target;
        for (const auto& m : router.slot_map().masters())
            if (m != source) target = m;
        exo::RedisConnection src(cluster.options_of(source));
        exo::RedisConnection dst(cluster.options_of(target));
        const std::string src_id = src.command({"CLUSTER", "MYID"}).str;
        const std::string dst_id = dst.command({"CLUSTER", "MYID"}).str;
        auto ok = [](const exo::RedisReply& r) {
            INFO(r.str);
            REQUIRE(r.type != exo::RedisReply::Type::error);
        };
        // What redis-cli --cluster reshard does for one slot, stopped half way:
        // the slot is migrating, and its one key is already on the target.
        ok(dst.command({"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", src_id}));
        ok(src.command({"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", dst_id}));
        ok(src.command({"MIGRATE", target.host, std::to_string(target.port), key, "0", "5000"}));

        // The source answers ASK for each key (it has neither); the target serves
        // a call after ASKING: the completed claim is a duplicate, the new key is
        // ours. (One key per call: a call of several keys that the target has only
        // some of is answered TRYAGAIN until the slot has moved; the router waits
        // a little, then the batch is put back.)
        CHECK_THROWS_WITH_AS(b.claim({"done", fresh}, 10s), doctest::Contains("TRYAGAIN"),
                             exo::RedisReplyError);
        const auto done = b.claim({"done"}, 10s);
        CHECK(done[0].status == exo::ClaimStatus::duplicate);
        CHECK(done[0].stored_result == "result-1");
        CHECK(b.claim({fresh}, 10s)[0].status == exo::ClaimStatus::acquired);
        CHECK(*router.slot_map().master(slot) == source);  // ASK does not change the map

        // The slot moves for good: the source answers MOVED, the map is read again.
        for (const auto& m : router.slot_map().masters()) {
            exo::RedisConnection node(cluster.options_of(m));
            ok(node.command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", dst_id}));
        }
        const auto after = a.claim({"done", fresh}, 10s);
        CHECK(after[0].status == exo::ClaimStatus::duplicate);
        CHECK(after[1].status == exo::ClaimStatus::conflict);  // owner-b's, leased
        CHECK(*router.slot_map().master(slot) == target);
    }

    TEST_CASE(
        "on a Redis Cluster every payment is applied exactly once although event ids repeat in "
        "the same and in other partitions") {
        TestCluster cluster;
        PipelineHarness h({.name = "cluster"});
        h.mutable_config().redis.cluster = cluster.nodes();
        auto workload = exo::generate_payments(
            {.count = 3000, .accounts = 50, .duplicate_ratio = 0.25, .partitions = 4, .seed = 17});
        REQUIRE(workload.duplicates > 500);
        h.produce(workload);

        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(60s));
        daemon.stop();

        h.check_exactly_once(workload);
        const auto& s = daemon.stats();
        CHECK(s.applied == workload.unique_events);
        CHECK(s.duplicates() == workload.duplicates);
        // Redis answered duplicates itself: the claims work on the cluster, and
        // the dedup row was not the only guard.
        CHECK(s.duplicates_redis > 0);
        CHECK(s.dead_lettered == 0);
        // Every master holds some of the group's claims.
        const exo::RedisRouter router({}, cluster.nodes());
        for (const auto& master : router.slot_map().masters())
            CHECK(keys_on(cluster, master, h.config().redis.key_prefix) > 0);
    }

    TEST_CASE("exo inspect reads a key's claim from the Redis Cluster node that holds it") {
        TestCluster cluster;
        PipelineHarness h({.name = "cl_inspect", .partitions = 1});
        h.mutable_config().redis.cluster = cluster.nodes();
        h.produce({exo::testing::payment("ok-1", "acc-1", 50, 1)});
        {
            RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
            REQUIRE(h.wait_until_consumed(60s));
        }
        const std::string config = write_config(h);
        auto inspected = exo_cli({"inspect", "--config", config, "--key", "ok-1", "--json"});
        CHECK(inspected.exit_code == 0);
        json j = json_of(inspected);
        CHECK(j["row"]["outcome"] == "APPLIED");
        CHECK(j["claim"]["state"] == "COMPLETED");
        CHECK(j["claim"]["token"] == std::to_string(j["row"]["fencing_token"].get<std::int64_t>()));
    }

    TEST_CASE(
        "on a Redis Cluster a master killed mid-run loses no effect and doubles none while its "
        "replica takes over") {
        TestCluster cluster;
        PipelineHarness h({.name = "failover"});
        h.mutable_config().redis.cluster = cluster.nodes();
        auto workload = exo::generate_payments(
            {.count = 6000, .accounts = 60, .duplicate_ratio = 0.2, .partitions = 4, .seed = 23});
        h.produce(workload);

        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        // Mid-run: some records applied, most not yet.
        wait_until_mid_run(daemon, workload);
        // The master of bucket 0's slot of this group: claims go there all run long.
        const int slot =
            exo::key_hash_slot(exo::cluster_hash_tag(h.config().kafka.group_id, /*bucket=*/0));
        const exo::HostPort victim = cluster.master_of(slot);
        const auto failures_before = daemon.stats().batch_failures.load();
        cluster.kill_node(victim);
        // Its replica is promoted (cluster-node-timeout 2 s, then an election)...
        const auto promoted_by = std::chrono::steady_clock::now() + 60s;
        while (cluster.master_of(slot) == victim && std::chrono::steady_clock::now() < promoted_by)
            std::this_thread::sleep_for(200ms);
        REQUIRE(cluster.master_of(slot) != victim);
        cluster.wait_ok();  // ...and every live node knows it

        REQUIRE(h.wait_until_consumed(90s));
        daemon.stop();
        h.check_exactly_once(workload);
        const auto& s = daemon.stats();
        CHECK(s.applied == workload.unique_events);
        CHECK(s.duplicates() == workload.duplicates);
        CHECK(s.dead_lettered == 0);
        // The kill was felt: batches were put back while the slot had no master.
        CHECK(s.batch_failures > failures_before);
    }

    TEST_CASE(
        "on a Redis Cluster a slot of the claims migrated mid-run by redis-cli --cluster reshard "
        "keeps every effect exactly once") {
        TestCluster cluster;
        PipelineHarness h({.name = "reshard"});
        h.mutable_config().redis.cluster = cluster.nodes();
        const auto& group = h.config().kafka.group_id;
        auto workload = exo::generate_payments(
            {.count = 6000, .accounts = 60, .duplicate_ratio = 0.2, .partitions = 4, .seed = 29});

        // The bucket slot of this group closest to the start of its master's range:
        // reshard moves a master's slots from its first one, so the fewest move.
        exo::RedisRouter router({}, cluster.nodes());
        const exo::SlotMap& map = router.slot_map();
        int slot = -1;
        int offset = exo::kClusterSlots;
        for (int bucket = 0; bucket < exo::cluster_buckets; ++bucket) {
            const int s = exo::key_hash_slot(exo::cluster_hash_tag(group, bucket));
            int first = s;
            while (first > 0 && map.master(first - 1) != nullptr &&
                   *map.master(first - 1) == *map.master(s))
                --first;
            if (s - first < offset) {
                offset = s - first;
                slot = s;
            }
        }
        REQUIRE(slot >= 0);
        const exo::HostPort source = *map.master(slot);
        exo::HostPort target;
        for (const auto& m : map.masters())
            if (m != source) target = m;
        auto id_of = [&](const exo::HostPort& node) {
            exo::RedisConnection redis(cluster.options_of(node));
            return redis.command({"CLUSTER", "MYID"}).str;
        };

        h.produce(workload);
        RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
        wait_until_mid_run(daemon, workload);
        // Small pipelines (--cluster-pipeline 10): the slot's keys move in several
        // steps, so claims meet the slot half moved (ASK, TRYAGAIN) and then moved (MOVED).
        const std::string log = "/tmp/" + exo::testing::unique_name("reshard") + ".log";
        const std::string command =
            "redis-cli --cluster reshard " + source.name() + " --cluster-from " + id_of(source) +
            " --cluster-to " + id_of(target) + " --cluster-slots " + std::to_string(offset + 1) +
            " --cluster-yes --cluster-pipeline 10 > '" + log + "' 2>&1";
        INFO(command);
        REQUIRE(std::system(command.c_str()) == 0);
        std::remove(log.c_str());
        CHECK(cluster.master_of(slot) == target);

        REQUIRE(h.wait_until_consumed(90s));
        daemon.stop();
        h.check_exactly_once(workload);
        const auto& s = daemon.stats();
        CHECK(s.applied == workload.unique_events);
        CHECK(s.duplicates() == workload.duplicates);
        CHECK(s.dead_lettered == 0);
        // The moved slot's claims are on the target now, written before and after the move.
        exo::RedisConnection on_target(cluster.options_of(target));
        CHECK(on_target.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}).integer > 0);
    }
}
