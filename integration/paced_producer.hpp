#pragma once
// A producer of payments in the background at a steady pace, for what a test does while
// records flow: the real-broker cases and the chaos runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "kafka/producer.hpp"
#include "payments_workload.hpp"
#include "pipeline_harness.hpp"
#include "support.hpp"

namespace exo::testing {

// Produces a workload's messages to the harness's topic in the background, about `per_second`
// a second, up to the count release() allows: what the test does while the producer is under
// way happens mid-stream. wait_produced() waits until every message released is acknowledged
// and rethrows the producer's error. Destruction stops it where it is.
class PacedProducer {
public:
    PacedProducer(const PipelineHarness& h, std::vector<exo::PaymentMessage> messages,
                  int per_second)
        : messages_(std::move(messages)),
          thread_([this, topic = h.topic(), bootstrap = h.bootstrap(), per_second] {
              try {
                  run(bootstrap, topic, per_second);
              } catch (...) {
                  error_ = std::current_exception();
                  failed_.store(true);  // publishes error_
              }
          }) {}
    PacedProducer(const PacedProducer&) = delete;
    PacedProducer& operator=(const PacedProducer&) = delete;
    ~PacedProducer() {
        stop_.store(true);
        thread_.join();
    }

    // Lets the producer go on up to message `count` (of all, counted from the first).
    void release(std::size_t count) { allowed_.store(std::min(count, messages_.size())); }
    // How many messages it has handed to librdkafka so far (not yet acknowledged, maybe).
    std::size_t sent() const { return sent_.load(); }
    // Waits until every released message was produced and acknowledged.
    void wait_produced() {
        const auto want = allowed_.load();
        wait_until(
            "the producer to be acknowledged for " + std::to_string(want) + " messages",
            std::chrono::seconds(60),
            [&] {
                if (failed_.load()) std::rethrow_exception(error_);
                return acknowledged_.load();
            },
            [&](std::size_t n) { return n >= want; });
    }

private:
    // Flushes about once a second: a flush that fails (a broker killed under the chaos run; a
    // client librdkafka declared failed for good, which KafkaProducer replaces) makes it
    // produce again from the last acknowledged message, as a real producer application does.
    // The copies are more duplicates of payments exo already dedups; at most kMaxRetries.
    void run(const std::string& bootstrap, const std::string& topic, int per_second) {
        constexpr int kMaxRetries = 20;
        exo::KafkaProducer producer(exo::ProducerOptions{bootstrap, {}});
        const auto step = std::chrono::milliseconds(20);
        const std::size_t per_step = std::max<std::size_t>(1, per_second / 50);
        std::size_t next = 0;
        int retries = 0;
        auto acknowledge = [&] {
            try {
                producer.flush(std::chrono::seconds(30));
                acknowledged_.store(next);
            } catch (const exo::KafkaError&) {
                if (++retries > kMaxRetries) throw;
                next = acknowledged_.load();
            }
        };
        for (int steps = 1; next < messages_.size() && !stop_.load(); ++steps) {
            const auto allowed = allowed_.load();
            if (next >= allowed || steps % 50 == 0) {
                acknowledge();
                if (next >= allowed) std::this_thread::sleep_for(step);
                continue;
            }
            for (std::size_t n = 0; n < per_step && next < allowed; ++n, ++next) {
                const auto& m = messages_[next];
                producer.produce({topic, m.partition, m.payment.account_id, m.payment.json(), {}});
            }
            sent_.store(std::max(sent_.load(), next));
            std::this_thread::sleep_for(step);
        }
        while (acknowledged_.load() < next && !stop_.load()) {
            acknowledge();
            for (; next < allowed_.load() && next < messages_.size(); ++next) {
                const auto& m = messages_[next];
                producer.produce({topic, m.partition, m.payment.account_id, m.payment.json(), {}});
            }
        }
    }

    const std::vector<exo::PaymentMessage> messages_;
    std::atomic<std::size_t> allowed_{0};
    std::atomic<std::size_t> sent_{0};
    std::atomic<std::size_t> acknowledged_{0};
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;  // written once, before failed_ is set
    std::atomic<bool> failed_{false};
    std::thread thread_;  // last: started once the members above exist
};

}  // namespace exo::testing
