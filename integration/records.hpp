#pragma once
// What the pipeline tests share: a payment record on cue, waiting on a condition
// with a deadline (never a fixed sleep), and reading a topic back with an
// independent consumer.
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kafka/consumer.hpp"
#include "kafka/kafka_logging.hpp"
#include "kafka/rdkafka_handles.hpp"
#include "support.hpp"
#include "workload/payments_workload.hpp"

namespace exo::testing {

inline PaymentMessage payment(const std::string& event, const std::string& account,
                              std::int64_t amount, std::int64_t sequence, int partition = 0) {
    return {{event, account, "CREDIT", amount, sequence}, partition, false};
}

// Polls `pred` every 20 ms until it holds or `timeout` passes; returns its last answer.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

// Reads `topic` from the beginning with a consumer of its own until `expected`
// records arrived or 30 s passed.
inline std::vector<Record> read_topic(const std::string& bootstrap, const std::string& topic,
                                      std::size_t expected) {
    struct Ignore : RebalanceListener {
        void on_assigned(const std::vector<TopicPartition>&) override {}
        void on_revoked(const std::vector<TopicPartition>&, bool) override {}
    } listener;
    KafkaConsumer consumer({bootstrap,
                            unique_name("reader"),
                            {topic},
                            {{"session.timeout.ms", "6000"}, {"fetch.wait.max.ms", "20"}}},
                           listener);
    std::vector<Record> got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (got.size() < expected && std::chrono::steady_clock::now() < deadline)
        for (auto& r : consumer.poll(100, std::chrono::milliseconds(200)))
            got.push_back(std::move(r));
    consumer.close();
    return got;
}

// How many records partition `partition` of `topic` holds (its high watermark):
// counts what was produced without waiting for records that never come.
inline std::int64_t partition_end(const std::string& bootstrap, const std::string& topic,
                                  int partition = 0) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    char reason[512];
    if (rd_kafka_conf_set(conf.get(), "bootstrap.servers", bootstrap.c_str(), reason,
                          sizeof reason) != RD_KAFKA_CONF_OK)
        throw std::runtime_error(reason);
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), reason, sizeof reason));
    if (!rk) throw std::runtime_error(reason);
    conf.release();  // owned by rk
    std::int64_t low = 0, high = 0;
    auto err =
        rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), partition, &low, &high, 10000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("watermarks of " + topic + ": " + rd_kafka_err2str(err));
    return high;
}

inline std::string header(const Record& r, const char* name) {
    auto* h = r.header(name);
    return h && h->value ? *h->value : "(missing)";
}

}  // namespace exo::testing
