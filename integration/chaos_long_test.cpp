// The long chaos run of scripts/chaos.sh, never part of CI: three `exo run` daemons on a
// 6-partition topic while a producer writes payments (with duplicates) for minutes, and a
// seeded random schedule of faults, one at a time: a daemon killed -9 and restarted, a daemon
// restarted to die between its PostgreSQL commit and its Redis completion (a failpoint), Redis
// flushed, Redis restarted empty, PostgreSQL crashed and restarted, and a Kafka node killed -9
// and restarted (a random node, a partition's leader or the group's coordinator). Against a
// three-node Apache Kafka (scripts/kafka.sh start --nodes 3: 3 replicas, min.insync.replicas
// 2) a node is killed only when every partition has all its replicas in sync, so the two left
// always hold min.insync.replicas; against the mock cluster (3 brokers) a broker is taken down
// and up. Afterwards every payment must be applied exactly once, the group's committed offsets
// must be at every partition's end and the outbox must have published every row. The figures
// of the run (faults of each kind, lost, doubled, lag, outbox) are printed in one line, and
// appended to $EXO_CHAOS_SUMMARY when set.
//
// Environment (scripts/chaos.sh sets it): EXO_CHAOS_SECONDS (how long the faults and the
// producer go on, default 600), EXO_CHAOS_SEED (the workload's and the schedule's, default 1),
// EXO_CHAOS_RATE (payments a second at the most, default 30: a loaded machine sends fewer, and
// the producer then stops at the deadline where it is, before the workload's cross-partition
// duplicates, which come last), EXO_KAFKA_KIND=apache for the cluster of kafka.env
// (EXO_KAFKA_DIR, EXO_KAFKA_SCRIPT), else the mock.
//
// Tagged chaos-long and skipped: doctest runs it only when asked, with
// `--no-skip --test-suite=chaos-long`, so CI's runners (scripts/integration.sh, scripts/tsan.sh,
// ctest) never list or run it.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apache_kafka.hpp"
#include "broker_node.hpp"
#include "chaos.hpp"
#include "kafka/group_progress.hpp"
#include "paced_producer.hpp"
#include "pipeline_harness.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::KafkaUnderTest;
using exo::testing::PipelineHarness;

namespace {

// The faults, in the order the summary names them.
enum class Fault {
    daemon_kill,
    failpoint_kill,
    redis_flush,
    redis_restart,
    postgres_restart,
    broker_kill
};

std::int64_t env_number(const char* name, std::int64_t fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::stoll(v) : fallback;
}

class ChaosClock {
public:
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    // One line of the run's story, as it happens: "[chaos 123.4 s] what".
    void say(const std::string& what) const {
        std::printf("[chaos %6.1f s] %s\n", seconds(), what.c_str());
        std::fflush(stdout);
    }

private:
    const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

TEST_CASE(
    "chaos, long (scripts/chaos.sh): daemons, Redis, PostgreSQL and Kafka nodes killed and "
    "restarted for minutes while producing lose and double no payment, leave no lag and publish "
    "the whole outbox" *
    doctest::test_suite("chaos-long") * doctest::skip()) {
    const auto seconds = env_number("EXO_CHAOS_SECONDS", 600);
    const auto seed = static_cast<std::uint64_t>(env_number("EXO_CHAOS_SEED", 1));
    const auto rate = static_cast<int>(env_number("EXO_CHAOS_RATE", 30));
    const char* kind = std::getenv("EXO_KAFKA_KIND");
    const bool apache = kind != nullptr && std::string(kind) == "apache";
    // On the mock a rebalance waits session.timeout.ms less 1 s: 3 s as in chaos_test.cpp. A real
    // broker refuses less than 6 s (group.min.session.timeout.ms).
    PipelineHarness h({.name = "chaoslong",
                       .partitions = 6,
                       .lease = apache ? 3000ms : 1500ms,
                       .brokers = 3,
                       .session_timeout = apache ? 6000ms : 3000ms,
                       .concurrency = 1,
                       .kafka = apache ? KafkaUnderTest::apache : KafkaUnderTest::mock});
    const auto planned = exo::generate_payments({.count = static_cast<int>(seconds * rate),
                                                 .accounts = 100,
                                                 .duplicate_ratio = 0.1,
                                                 .partitions = 6,
                                                 .seed = seed});
    ChaosClock clock;
    clock.say(std::string("kafka ") + (apache ? "apache, three nodes" : "mock, three brokers") +
              ", seed " + std::to_string(seed) + ", " + std::to_string(planned.messages.size()) +
              " records at " + std::to_string(rate) + "/s at the most, topic " + h.topic());

    exo::testing::DaemonFleet daemons(h, 3);
    std::vector<bool> armed(daemons.size(), false);  // launched with the failpoint
    exo::testing::PacedProducer producer(h, planned.messages, rate);
    producer.release(planned.messages.size());

    std::mt19937_64 rng(seed);
    const auto between = [&](int low, int high) {
        return std::uniform_int_distribution<int>(low, high)(rng);
    };
    std::map<Fault, int> faults;
    std::map<std::string, int> broker_targets;  // "any", "leader", "coordinator"
    int unexpected_exits = 0;

    // Daemons that ended by themselves: the failpoint's, or a crash (counted, and fails the
    // case). Each is replaced by a plain daemon.
    const auto reap = [&] {
        for (std::size_t i = 0; i < daemons.size(); ++i) {
            if (!daemons.ended(i)) continue;
            if (armed[i]) {
                ++faults[Fault::failpoint_kill];
                clock.say("daemon " + std::to_string(i) + " died at its failpoint; restarted");
            } else {
                ++unexpected_exits;
                clock.say("daemon " + std::to_string(i) + " ENDED UNASKED; restarted");
            }
            armed[i] = false;
            daemons.launch(i);
        }
    };
    const auto pause = [&](int low, int high) {
        const int s = between(low, high);
        std::this_thread::sleep_for(std::chrono::seconds(s));
        return s;
    };

    // The node a broker fault takes down: a random one, the leader of a random partition of the
    // topic, or the group's coordinator (Apache Kafka only: the mock's admin API has no
    // DescribeConsumerGroups); any node when the chosen one cannot be told.
    const auto pick_node = [&]() -> std::pair<int, std::string> {
        const int choice = between(0, apache ? 2 : 1);
        int node = -1;
        std::string what = "any";
        if (choice == 1) {
            const int partition = between(0, 5);
            node = exo::testing::partition_leader(h.bootstrap(), h.topic(), partition);
            what = "leader";
        } else if (choice == 2) {
            node = exo::testing::group_coordinator(h.bootstrap(), h.config().kafka.group_id);
            what = "coordinator";
        }
        if (node < 1 || node > 3) return {between(1, 3), "any"};
        return {node, what};
    };

    const std::vector<std::pair<Fault, int>> weights = {
        {Fault::daemon_kill, 3},      {Fault::failpoint_kill, 1},
        {Fault::redis_flush, 1},      {Fault::redis_restart, 1},
        {Fault::postgres_restart, 1}, {Fault::broker_kill, apache ? 3 : 1}};
    int total_weight = 0;
    for (const auto& [fault, weight] : weights) total_weight += weight;

    while (producer.sent() < planned.messages.size() && clock.seconds() < seconds) {
        pause(3, 10);
        reap();
        int draw = between(0, total_weight - 1);
        Fault fault = weights.front().first;
        for (const auto& [f, weight] : weights) {
            if (draw < weight) {
                fault = f;
                break;
            }
            draw -= weight;
        }
        switch (fault) {
            case Fault::daemon_kill: {
                const auto victim = static_cast<std::size_t>(between(0, 2));
                daemons.kill(victim);
                armed[victim] = false;
                daemons.launch(victim);
                ++faults[fault];
                clock.say("daemon " + std::to_string(victim) + " killed -9 and restarted");
                break;
            }
            case Fault::failpoint_kill: {
                // Counted when it dies at the failpoint (reap): kill@N is its Nth commit.
                const auto victim = static_cast<std::size_t>(between(0, 2));
                const int nth = between(1, 20);
                daemons.kill(victim);
                ++faults[Fault::daemon_kill];
                daemons.launch(victim,
                               {{"EXO_FAILPOINTS", "after_pg_commit=kill@" + std::to_string(nth)}});
                armed[victim] = true;
                clock.say("daemon " + std::to_string(victim) +
                          " killed -9 and restarted to die after its PostgreSQL commit number " +
                          std::to_string(nth));
                break;
            }
            case Fault::redis_flush:
                exo::testing::flush_redis();
                ++faults[fault];
                clock.say("Redis flushed");
                break;
            case Fault::redis_restart: {
                exo::testing::services("redis-stop");
                const int down = pause(1, 5);
                exo::testing::services("redis-start");
                ++faults[fault];
                clock.say("Redis stopped, started again empty " + std::to_string(down) +
                          " s later");
                break;
            }
            case Fault::postgres_restart: {
                exo::testing::services("postgres-stop");
                const int down = pause(1, 5);
                exo::testing::services("postgres-start");
                ++faults[fault];
                clock.say("PostgreSQL crashed (stop -m immediate), started again " +
                          std::to_string(down) + " s later");
                break;
            }
            case Fault::broker_kill: {
                if (apache) {
                    // One node at a time, and only when the two others hold every partition in
                    // sync: then min.insync.replicas 2 holds while it is down.
                    const auto synced = exo::testing::eventually(
                        [&] {
                            return exo::testing::under_replicated_partitions(h.bootstrap()) == 0;
                        },
                        180s);
                    REQUIRE_MESSAGE(synced,
                                    "partitions still under-replicated 180 s after the "
                                    "last node's restart");
                }
                const auto [node, what] = pick_node();
                std::optional<exo::testing::BrokerNode> real;
                if (apache) {
                    real.emplace(exo::testing::required_env("EXO_KAFKA_DIR"), node,
                                 "/tmp/" + h.schema());
                    real->kill();
                } else {
                    h.cluster().set_broker_down(node);
                }
                const int down = pause(2, 10);
                if (apache)
                    real->start();
                else
                    h.cluster().set_broker_up(node);
                ++faults[fault];
                ++broker_targets[what];
                clock.say("Kafka node " + std::to_string(node) + " (" + what + ") " +
                          (apache ? "killed -9" : "down") + ", started again " +
                          std::to_string(down) + " s later");
                break;
            }
        }
    }
    // The producer stops where it is (release() caps what it sends next; what it sent is kept).
    producer.release(producer.sent());
    producer.wait_produced();
    const auto workload = exo::testing::first_messages(planned, producer.sent());
    clock.say("no more faults; the producer stopped after " +
              std::to_string(workload.messages.size()) + " of " +
              std::to_string(planned.messages.size()) + " records");
    reap();
    const bool consumed = h.wait_until_consumed(600s);
    const bool published = exo::testing::eventually(
        [&] { return h.count("SELECT count(*) FROM exo_outbox_pending") == 0; }, 180s);
    clock.say(std::string("consumed: ") + (consumed ? "yes" : "NO") +
              ", outbox published: " + (published ? "yes" : "NO"));
    reap();
    daemons.terminate();

    const auto once = exo::testing::exactly_once_figures(h, workload);
    const auto lag = exo::group_lag(h.bootstrap(), h.config().kafka.group_id, h.topic());
    const auto outbox = exo::testing::outbox_figures(h);
    std::ostringstream line;
    line << "chaos figures: kafka " << (apache ? "apache (3 nodes)" : "mock (3 brokers)")
         << ", seed " << seed << ", " << static_cast<int>(clock.seconds()) << " s, "
         << workload.messages.size() << " records (" << workload.unique_events << " payments, "
         << workload.duplicates << " duplicates); kills: daemon " << faults[Fault::daemon_kill]
         << ", failpoint " << faults[Fault::failpoint_kill] << ", redis flush "
         << faults[Fault::redis_flush] << ", redis restart " << faults[Fault::redis_restart]
         << ", postgres restart " << faults[Fault::postgres_restart] << ", broker "
         << faults[Fault::broker_kill] << " (leader " << broker_targets["leader"]
         << ", coordinator " << broker_targets["coordinator"] << ", any " << broker_targets["any"]
         << "); unasked exits " << unexpected_exits << "; lost " << once.lost << ", doubled "
         << once.doubled << ", wrong balances " << once.wrong_balances << ", lag "
         << (lag ? std::to_string(*lag) : std::string("unknown")) << "; outbox " << outbox;
    clock.say(line.str());
    if (const char* summary = std::getenv("EXO_CHAOS_SUMMARY"); summary && *summary)
        std::ofstream(summary, std::ios::app) << line.str() << '\n';

    CHECK(consumed);
    CHECK(published);
    CHECK(unexpected_exits == 0);
    CHECK(once.lost == 0);
    CHECK(once.doubled == 0);
    CHECK(once.wrong_balances == 0);
    CHECK(lag == std::optional<std::int64_t>(0));
    h.check_exactly_once(workload);
    const auto unique = static_cast<std::int64_t>(workload.unique_events);
    CHECK(outbox.rows == unique);
    CHECK(outbox.pending == 0);
    CHECK(outbox.distinct_ids == unique);
    CHECK(outbox.in_order);
}
