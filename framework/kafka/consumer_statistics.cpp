#include "kafka/consumer_statistics.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace exo {

ConsumerStatistics parse_consumer_statistics(std::string_view json) {
    const auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object())
        throw std::invalid_argument("librdkafka statistics are not a JSON object");
    ConsumerStatistics out;
    if (auto brokers = doc.find("brokers"); brokers != doc.end() && brokers->is_object()) {
        for (const auto& [name, broker] : brokers->items()) {
            // The internal broker ("GroupCoordinator", ":0/internal") is no connection.
            if (!broker.is_object() || broker.value("source", "") == "internal") continue;
            ++out.brokers;
            if (broker.value("state", "") == "UP") ++out.brokers_up;
        }
    }
    auto topics = doc.find("topics");
    if (topics == doc.end() || !topics->is_object()) return out;
    for (const auto& [topic, t] : topics->items()) {
        auto partitions = t.find("partitions");
        if (partitions == t.end() || !partitions->is_object()) continue;
        for (const auto& [id, p] : partitions->items()) {
            if (!p.is_object()) continue;
            const auto partition = p.value("partition", std::int64_t{-1});
            const auto lag = p.value("consumer_lag", std::int64_t{-1});
            // -1: librdkafka's unassigned-partition placeholder, or an unknown lag.
            if (partition < 0 || lag < 0) continue;
            out.lag[TopicPartition{Topic{topic}, Partition{static_cast<std::int32_t>(partition)}}] =
                lag;
        }
    }
    return out;
}

}  // namespace exo
