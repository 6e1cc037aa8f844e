#pragma once
// Creating and deleting topics through Kafka's admin API, for exo_bench and the tests that
// run against a broker that creates no topic on use (scripts/kafka.sh, as production
// clusters run). exo itself creates no topics: the daemon only checks the ones it needs
// (topic_inspection.hpp). Free functions, each with its own short-lived client: callable from
// any thread. Plaintext bootstrap servers only.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace exo {

struct TopicsToCreate {
    std::vector<std::pair<std::string, int>> topics;  // name, partitions
    std::map<std::string, std::string> config{};      // topic configs for each (e.g. retention.ms)
    bool existing_ok = false;                         // false: a topic that exists is an error
};

// Creates each topic with the broker's default replication factor and waits (up to 30 s)
// until every partition has a leader: a client that comes at once would otherwise see
// UNKNOWN_TOPIC_OR_PART. Throws std::runtime_error naming the topic and the broker's reason.
void create_topics(const std::string& bootstrap, const TopicsToCreate& request);

// Deletes `topics`; one that does not exist is not an error. Throws std::runtime_error naming
// the first topic the broker refused, or the request's failure.
void delete_topics(const std::string& bootstrap, const std::vector<std::string>& topics);

}  // namespace exo
