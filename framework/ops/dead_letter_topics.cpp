#include "ops/dead_letter_topics.hpp"

#include <set>

namespace exo {
namespace {

constexpr std::chrono::seconds kKafkaTimeout{30};

bool unknown_topic(const KafkaError& e) {
    return e.code() == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
           e.code() == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
}

}  // namespace

const std::vector<Record>& DeadLetterTopics::records(const std::string& dlq_topic) {
    auto it = read_.find(dlq_topic);
    if (it != read_.end()) return it->second;
    std::vector<Record> records;
    try {
        records = reader_.read_all(dlq_topic, kKafkaTimeout);
    } catch (const KafkaError& e) {
        // Created by the first dead letter when Kafka auto-creates topics.
        if (!unknown_topic(e)) throw;
    }
    return read_.emplace(dlq_topic, std::move(records)).first->second;
}

std::vector<LetterView> DeadLetterTopics::letters() {
    std::set<std::string> topics;
    for (const auto& b : bindings_) topics.insert(b.dead_letter_topic);
    std::vector<LetterView> out;
    for (const auto& topic : topics)
        for (const auto& r : records(topic))
            if (auto l = read_letter(r)) out.push_back(std::move(*l));
    return out;
}

}  // namespace exo
