#pragma once
// The plain librdkafka group consumer the steady-rate latency runs measure exo beside: subscribe,
// poll, nothing else (no processing, offsets auto-committed: librdkafka's defaults), on the same
// cluster and topic as exo in its own group. Per record it notes produce -> poll return: the
// record's CreateTime (set by the producer's produce() call, millisecond resolution, as exo's
// TimedLedgerHandler reads it) against the wall clock when rd_kafka_consumer_poll() returned it.
//
// Lifecycle: polls on its own thread from construction until stop() or destruction, which
// closes the consumer (leaving the group). Thread-safety: ready(), received() and failed() may
// be called from any thread; samples() and error() only after stop().
#include <atomic>
#include <cstdint>
#include <map>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "kafka/rdkafka_handles.hpp"
#include "latency_handler.hpp"

namespace exo::bench {

class PlainConsumer {
public:
    // `properties`: librdkafka consumer properties over the defaults (the run's
    // consumer_properties(), so exo and this consumer fetch alike). auto.offset.reset is
    // earliest: records produced before the first fetch position are not skipped.
    // Throws std::runtime_error when the consumer cannot be created or subscribed.
    PlainConsumer(const std::string& bootstrap, const std::string& group, const std::string& topic,
                  const std::map<std::string, std::string>& properties);
    ~PlainConsumer();
    PlainConsumer(const PlainConsumer&) = delete;
    PlainConsumer& operator=(const PlainConsumer&) = delete;

    // True once the group gave it partitions.
    bool ready() const { return ready_.load(); }
    std::uint64_t received() const { return received_.load(); }
    bool failed() const { return failed_.load(); }
    void stop();

    // (produce time in wall-clock microseconds, produce -> poll return in ms) per record.
    const std::vector<LatencySample>& samples() const { return samples_; }
    const std::string& error() const { return error_; }

private:
    void run(std::stop_token stop);

    KafkaHandle consumer_;
    std::vector<LatencySample> samples_;  // the poll thread's until it is joined
    std::string error_;
    std::atomic<bool> ready_{false}, failed_{false};
    std::atomic<std::uint64_t> received_{0};
    std::jthread thread_;  // last: joined before the members it uses go
};

}  // namespace exo::bench
