#pragma once
// Topics on a real Kafka cluster, for exo_bench against a broker that creates none on use
// (scripts/kafka.sh runs with auto.create.topics.enable=false, as production clusters do).
// The mock cluster creates its topics through MockCluster::create_topic instead.
// Free functions, each with its own short-lived admin client: callable from any thread.
#include <string>
#include <utility>
#include <vector>

namespace exo::bench {

// Creates each (name, partitions) with the broker's default replication factor and waits
// until every partition has a leader (a client that comes at once would otherwise see
// UNKNOWN_TOPIC_OR_PART). A topic that exists already is an error: exo_bench's topic names
// are unique per process and run, so one that exists is another invocation's.
// Throws std::runtime_error naming the topic and the broker's reason.
void create_topics(const std::string& bootstrap,
                   const std::vector<std::pair<std::string, int>>& topics);

// Deletes `topics` (a missing one is not an error). Never throws: a failure is written to
// stderr, since a topic left behind on a throw-away broker costs only its disk.
void delete_topics(const std::string& bootstrap, const std::vector<std::string>& topics);

}  // namespace exo::bench
