#pragma once
// Kafka's naming rules and the consumer properties exo keeps for itself, written
// once for all who check them: the config readers (exo.yaml), `exo mock-kafka`
// and KafkaConsumer. Pure: no librdkafka, no I/O.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace exo {

// The longest topic name a broker accepts.
inline constexpr std::size_t kMaxTopicNameLength = 249;

// What is wrong with `name` as a topic name, in words for the user, or nullopt
// if a broker accepts it: 1 to 249 characters among letters, digits, '.', '_'
// and '-', and neither "." nor "..".
std::optional<std::string> topic_name_problem(std::string_view name);

// A topic to create, written "NAME:PARTITIONS" (kafka.mock.topics in exo.yaml,
// `exo mock-kafka --topic`), split at its last ':'. Neither part is checked:
// see topic_name_problem and partition_count.
struct TopicSpecText {
    std::string_view name;                       // before the last ':', or all of it
    std::optional<std::string_view> partitions;  // after it; nullopt without a ':'
};
TopicSpecText split_topic_spec(std::string_view spec) noexcept;

// The partition count written in `text`: a whole number of at least 1 with
// nothing around it (no sign, no spaces, no unit); nullopt for anything else.
std::optional<int> partition_count(std::string_view text) noexcept;

// True for the librdkafka consumer properties exo sets itself, which a caller
// may not set: group.id (the consumer group is exo's own setting), and
// enable.auto.commit and enable.auto.offset.store (either would commit the
// offset of a record whose outcome is not durable yet).
bool is_reserved_consumer_property(std::string_view name) noexcept;

// True for librdkafka properties only a consumer reads (session.timeout.ms,
// fetch.*, ...): a producer built from the consumer's properties (for their
// security settings) leaves them out instead of warning about each.
bool is_consumer_only_property(std::string_view name) noexcept;

}  // namespace exo
