#pragma once
// What exo reads from librdkafka's statistics (the JSON its stats callback
// hands over every statistics.interval.ms; STATISTICS.md of librdkafka): the
// consumer lag of each partition and whether any broker connection is up.
// Pure: the consumer hands the text over, the daemon keeps the last reading.
#include <cstdint>
#include <map>
#include <string_view>

#include <exo/types.hpp>

namespace exo {

struct ConsumerStatistics {
    // Per assigned partition: its end (the high watermark, or the last stable
    // offset under read_committed) - the group's committed offset. Partitions whose
    // lag librdkafka does not know yet (-1) are left out.
    std::map<TopicPartition, std::int64_t> lag;
    int brokers = 0;     // bootstrap and learned brokers (the internal one left out)
    int brokers_up = 0;  // ... whose connection is in state UP
};

// Throws std::invalid_argument for text that is not such a JSON object; a
// missing section reads as empty (older or newer librdkafka versions).
ConsumerStatistics parse_consumer_statistics(std::string_view json);

}  // namespace exo
