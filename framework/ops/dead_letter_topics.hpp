#pragma once
// The dead-letter topics of a config's bindings, read back for the operator
// commands: each topic is read whole, once per command, and kept (dead-letter
// volumes are small; docs/operations.md "Known limits").
//
// Thread-safety: none; one per command. Throws KafkaError when Kafka cannot be
// read (a topic Kafka does not know has no letters: nothing was dead-lettered).
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "kafka/topic_reader.hpp"
#include "ops/unsettled_letters.hpp"

namespace exo {

class DeadLetterTopics {
public:
    // `bindings` (whose dead-letter topics letters() reads) and `reader` outlive this.
    DeadLetterTopics(const std::vector<BindingConfig>& bindings, TopicReader& reader)
        : bindings_(bindings), reader_(reader) {}

    // Every record of `dlq_topic`, in partition and offset order.
    const std::vector<Record>& records(const std::string& dlq_topic);

    // The dead letters of every binding's dead-letter topic (each topic once).
    std::vector<LetterView> letters();

private:
    const std::vector<BindingConfig>& bindings_;
    TopicReader& reader_;
    std::map<std::string, std::vector<Record>> read_;
};

}  // namespace exo
