#pragma once
// A node of an Apache Kafka started by scripts/kafka.sh, crashed and started again by the test.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "child_process.hpp"
#include "support.hpp"

namespace exo::testing {

// One node of the broker scripts/kafka.sh started (EXO_KAFKA_DIR, the real-kafka part's own, or
// a case's): kill() crashes it (kill -9, data kept), start() brings it back on the same ports
// and returns once it answers. A node still down when this is destroyed is started again, so a
// failing case leaves the part's broker up for the next one.
class BrokerNode {
public:
    // `log_prefix`: where kafka.sh's output goes, + "-kill-node-N.log" or "-start-node-N.log".
    BrokerNode(std::string dir, int node, std::string log_prefix)
        : dir_(std::move(dir)), node_(node), log_prefix_(std::move(log_prefix)) {}
    BrokerNode(const BrokerNode&) = delete;
    BrokerNode& operator=(const BrokerNode&) = delete;
    ~BrokerNode() {
        if (down_) static_cast<void>(script("start-node"));
    }

    void kill() {
        const auto done = script("kill-node");
        REQUIRE_MESSAGE(done.has_value(), "kafka.sh kill-node still runs after 180 s");
        REQUIRE_MESSAGE(done->exit_code == 0, "kafka.sh kill-node failed: " << done->output);
        down_ = true;
    }
    void start() {
        const auto done = script("start-node");
        REQUIRE_MESSAGE(done.has_value(), "kafka.sh start-node still runs after 180 s");
        REQUIRE_MESSAGE(done->exit_code == 0, "kafka.sh start-node failed: " << done->output);
        down_ = false;
    }

private:
    std::optional<exo::testing::FinishedChild> script(const std::string& command) const {
        return exo::testing::run_to_end(
            exo::testing::required_env("EXO_KAFKA_SCRIPT"), {command, dir_, std::to_string(node_)},
            {}, log_prefix_ + "-" + command + "-" + std::to_string(node_) + ".log",
            std::chrono::seconds(180));
    }

    const std::string dir_;
    const int node_;
    const std::string log_prefix_;
    bool down_ = false;
};

}  // namespace exo::testing
