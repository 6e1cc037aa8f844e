// `exo mock-kafka`: flags to run_mock_kafka().
#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/mock_kafka_command.hpp"
#include "kafka/kafka_names.hpp"

namespace exo {

int mock_kafka_command(int argc, char** argv, std::stop_token stop) {
    Arguments args("mock-kafka", argc, argv, 2, {"brokers", "topic", "bootstrap-file"});
    std::vector<std::pair<std::string, int>> topics;
    for (const auto& spec : args.all("topic")) {
        const TopicSpecText written = split_topic_spec(spec);
        const std::optional<int> partitions =
            written.partitions ? partition_count(*written.partitions) : std::nullopt;
        if (written.name.empty() || !partitions)
            throw UsageError("--topic '" + spec + "' must be NAME:PARTITIONS, e.g. payments:4");
        if (auto problem = topic_name_problem(written.name))
            throw UsageError("--topic '" + spec + "': " + *problem);
        topics.emplace_back(std::string(written.name), *partitions);
    }
    int brokers = args.get_int("brokers", 1);
    if (brokers < 1) throw UsageError("--brokers must be at least 1");
    return run_mock_kafka(brokers, topics, args.get("bootstrap-file").value_or(""), stop);
}

}  // namespace exo
