// `exo mock-kafka`: flags to run_mock_kafka().
#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/mock_kafka_command.hpp"

namespace exo {

int mock_kafka_command(int argc, char** argv, std::stop_token stop) {
    Arguments args("mock-kafka", argc, argv, 2, {"brokers", "topic", "bootstrap-file"});
    std::vector<std::pair<std::string, int>> topics;
    for (const auto& spec : args.all("topic")) {
        auto colon = spec.rfind(':');
        int partitions = 0;
        try {
            partitions = colon == std::string::npos ? 0 : std::stoi(spec.substr(colon + 1));
        } catch (const std::exception&) {
        }
        if (colon == 0 || partitions < 1)
            throw UsageError("--topic '" + spec + "' must be NAME:PARTITIONS, e.g. payments:4");
        topics.emplace_back(spec.substr(0, colon), partitions);
    }
    int brokers = args.get_int("brokers", 1);
    if (brokers < 1) throw UsageError("--brokers must be at least 1");
    return run_mock_kafka(brokers, topics, args.get("bootstrap-file").value_or(""), stop);
}

}  // namespace exo
