#pragma once
// The real Apache Kafka of the test cases tagged `* doctest::test_suite("real-kafka")`: the
// broker scripts/kafka.sh starts (scripts/integration.sh's real-kafka part, scripts/test.sh's
// real-broker stage), which creates no topic on use, as production clusters run.
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace exo::testing {

// EXO_KAFKA_BOOTSTRAP of scripts/kafka.sh's kafka.env. Throws std::runtime_error (the case
// fails, it is not skipped) when EXO_KAFKA_KIND is not "apache": the case was run against the
// mock cluster, or without any broker.
std::string apache_kafka_bootstrap();

// Creates each topic (name, partitions) with the broker's default replication factor (every
// node of scripts/kafka.sh's cluster) and waits until the broker reports its partitions led.
// A topic that exists already is left as it is. `config`: topic configs for every topic
// created (e.g. max.message.bytes). Throws std::runtime_error naming the topic and the
// broker's error.
void create_topics(const std::string& bootstrap,
                   const std::vector<std::pair<std::string, int>>& topics,
                   const std::map<std::string, std::string>& config = {});

// The node id (scripts/kafka.sh's node number) of the broker leading `topic`'s `partition`, as
// the metadata of `bootstrap` says; -1 while it has none. Throws std::runtime_error when the
// metadata cannot be read or does not list the partition.
int partition_leader(const std::string& bootstrap, const std::string& topic, int partition);

// The node id of `group`'s coordinator (DescribeConsumerGroups); -1 while the cluster cannot
// tell (the group unknown yet, its coordinator moving, no answer in 10 s).
int group_coordinator(const std::string& bootstrap, const std::string& group);

// How many partitions of the cluster's topics (the internal ones too) have fewer in-sync
// replicas than replicas, as the metadata of `bootstrap` says; -1 when the metadata cannot be
// read. 0 on a three-node cluster: any one node may be killed without a partition falling
// below min.insync.replicas 2.
int under_replicated_partitions(const std::string& bootstrap);

// A consumer group as its coordinator describes it: its state ("Stable", "PreparingRebalance",
// "CompletingRebalance", "Empty", "Dead"; "" while the broker cannot tell) and its members.
struct GroupState {
    std::string state;
    int members = 0;
};
GroupState describe_group(const std::string& bootstrap, const std::string& group);

inline std::ostream& operator<<(std::ostream& out, const GroupState& g) {
    return out << (g.state.empty() ? "(unknown)" : g.state) << " with " << g.members
               << " member(s)";
}

}  // namespace exo::testing
