// What `exo run` checks about the topics it produces to before it joins its group
// (protocol/produced_topics.hpp): which topics, and what the brokers' answer means. No servers.
#include <doctest/doctest.h>

#include "protocol/produced_topics.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

namespace {

Config two_bindings() {
    return parse(std::string(kMinimal) +
                 "  - topic: refunds\n    handler: ledger\n    key: coordinates\n"
                 "    dead_letter_topic: payments.dlq\n"
                 "outbox:\n  topics: [ledger.applied, payments.dlq]\n");
}

TopicInspection all_exist(const std::vector<ProducedTopic>& topics) {
    TopicInspection seen;
    seen.auto_create = false;  // as production clusters run, and they say so
    for (const auto& t : topics) seen.topics[t.topic] = TopicFacts{true, std::nullopt};
    return seen;
}

}  // namespace

TEST_SUITE("produced topics") {
    TEST_CASE("the dead-letter topics and outbox.topics are checked, each once, with their key") {
        const auto topics = produced_topics(two_bindings());
        REQUIRE(topics.size() == 2);
        CHECK(topics[0].topic == "payments.dlq");
        CHECK(topics[0].named_by.find("bindings[0].dead_letter_topic") != std::string::npos);
        CHECK(topics[1].topic == "ledger.applied");
        CHECK(topics[1].named_by.find("outbox.topics[0]") != std::string::npos);
    }

    TEST_CASE("a missing topic is named with the key naming it, and the fix") {
        const auto topics = produced_topics(two_bindings());
        auto seen = all_exist(topics);
        CHECK(missing_topics_problem(topics, seen).empty());
        seen.topics["ledger.applied"].exists = false;
        const auto problem = missing_topics_problem(topics, seen);
        CHECK(problem.find("'ledger.applied' (outbox.topics[0]") != std::string::npos);
        CHECK(problem.find("payments.dlq") == std::string::npos);
        CHECK(problem.find("Create them") != std::string::npos);
        // Not even in the answer (the brokers list only the topics that exist).
        seen.topics.erase("payments.dlq");
        CHECK(missing_topics_problem(topics, seen).find("'payments.dlq' (bindings[0]") !=
              std::string::npos);
    }

    TEST_CASE("brokers that create topics on first use make a missing topic no problem") {
        const auto topics = produced_topics(two_bindings());
        TopicInspection seen;
        seen.auto_create = true;
        CHECK(missing_topics_problem(topics, seen).empty());
        CHECK(missing_topics_warning(topics, seen).empty());
        seen.auto_create = false;
        CHECK_FALSE(missing_topics_problem(topics, seen).empty());
        // Not told (the mock cluster, which creates topics on first use; ACLs): no wait, a
        // warning naming the missing topics.
        seen.auto_create = std::nullopt;
        CHECK(missing_topics_problem(topics, seen).empty());
        CHECK(missing_topics_warning(topics, seen).find("payments.dlq") != std::string::npos);
    }

    TEST_CASE("the limits the brokers told of outbox.topics are learned, the others not") {
        TopicInspection seen;
        seen.topics["small"] = TopicFacts{true, 2000};
        seen.topics["untold"] = TopicFacts{true, std::nullopt};
        seen.topics["payments.dlq"] = TopicFacts{true, 1000};
        EmitLimits limits(1000000);
        learn_topic_limits(limits, seen, {"small", "untold"});
        CHECK(limits.topic_bytes("small") == 2000u);
        CHECK_FALSE(limits.topic_bytes("untold"));
        CHECK_FALSE(limits.topic_bytes("payments.dlq"));
        CHECK(limits.smallest_topic_bytes() == 2000u);
        CHECK(limits.producer_bytes() == 1000000u);
    }

    TEST_CASE("the check's client has the producers' properties, not the consumer-only ones") {
        KafkaConfig kafka;
        kafka.properties = {{"security.protocol", "SASL_SSL"}, {"session.timeout.ms", "6000"}};
        const auto client = topic_check_client("b:9092", kafka);
        CHECK(client.bootstrap_servers == "b:9092");
        CHECK(client.properties.contains("security.protocol"));
        CHECK_FALSE(client.properties.contains("session.timeout.ms"));
    }
}
