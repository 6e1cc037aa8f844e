// The daemon's offset commits against a slow broker (docs/design.md#offsets):
// the periodic commit is queued, so a broker slow to answer it delays the commit,
// never the records polled meanwhile.
#include <doctest/doctest.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <thread>

#include "kafka/mock_cluster.hpp"
#include "pipeline_harness.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::PipelineHarness;
using exo::testing::RunningDaemon;
using exo::testing::wait_until;

namespace {
constexpr std::int16_t kOffsetCommitApiKey = 8;
}

TEST_CASE(
    "records polled while the broker is slow to answer an offset commit are applied "
    "without waiting for that answer, and the offsets are committed once it comes") {
    PipelineHarness h({.name = "slow_commit", .partitions = 1});
    auto workload =
        exo::generate_payments({.count = 20, .accounts = 5, .duplicate_ratio = 0, .partitions = 1});
    const std::vector<exo::PaymentMessage> first(workload.messages.begin(),
                                                 workload.messages.begin() + 10);
    const std::vector<exo::PaymentMessage> second(workload.messages.begin() + 10,
                                                  workload.messages.end());
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    h.produce(first);
    wait_until(
        "the first 10 records applied", 60s, [&] { return daemon.stats().applied.load(); },
        [](std::uint64_t n) { return n == 10; });
    // The group coordinator answers the next offset commit (the one the drained
    // pipeline sends now) only after 15 s. A commit on the poll thread would hold
    // every record produced meanwhile for those 15 s.
    REQUIRE(rd_kafka_mock_broker_push_request_error_rtts(h.cluster().raw(), 1, kOffsetCommitApiKey,
                                                         1, RD_KAFKA_RESP_ERR_NO_ERROR,
                                                         15000) == RD_KAFKA_RESP_ERR_NO_ERROR);
    std::this_thread::sleep_for(500ms);  // the drain commit goes out (200 ms interval)
    h.produce(second);
    wait_until(
        "the other 10 records applied while the commit is unanswered", 8s,
        [&] { return daemon.stats().applied.load(); }, [](std::uint64_t n) { return n == 20; });
    // The answer comes; the offsets of all 20 are committed after it.
    REQUIRE(h.wait_until_consumed(90s));
    daemon.stop();
    h.check_exactly_once(workload);
}
