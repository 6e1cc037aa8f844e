#include "plain_consumer.hpp"

#include <chrono>
#include <stdexcept>

namespace exo::bench {
namespace {

std::int64_t wall_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
    char err[512];
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
        throw std::runtime_error("plain consumer: " + key + "=" + value + ": " + err);
}

}  // namespace

PlainConsumer::PlainConsumer(const std::string& bootstrap, const std::string& group,
                             const std::string& topic,
                             const std::map<std::string, std::string>& properties) {
    KafkaConf conf(rd_kafka_conf_new());
    set(conf.get(), "bootstrap.servers", bootstrap);
    set(conf.get(), "group.id", group);
    set(conf.get(), "auto.offset.reset", "earliest");
    set(conf.get(), "log_level", "3");
    for (const auto& [k, v] : properties) set(conf.get(), k, v);
    char err[512];
    consumer_.reset(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), err, sizeof err));
    if (!consumer_) throw std::runtime_error(std::string("plain consumer: ") + err);
    conf.release();  // rd_kafka_new took it
    rd_kafka_poll_set_consumer(consumer_.get());
    TopicPartitionList topics(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(topics.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
    if (auto e = rd_kafka_subscribe(consumer_.get(), topics.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("plain consumer: subscribe to " + topic + ": " +
                                 rd_kafka_err2str(e));
    samples_.reserve(1 << 20);  // grown on the poll thread otherwise, inside the measurement
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

PlainConsumer::~PlainConsumer() {
    stop();
}

void PlainConsumer::stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
    rd_kafka_consumer_close(consumer_.get());
}

void PlainConsumer::run(std::stop_token stop) {
    while (!stop.stop_requested()) {
        MessageHandle m(rd_kafka_consumer_poll(consumer_.get(), 100));
        const auto now = wall_us();
        if (!ready_.load()) {
            rd_kafka_topic_partition_list_t* raw = nullptr;
            if (rd_kafka_assignment(consumer_.get(), &raw) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                TopicPartitionList assigned(raw);
                if (assigned->cnt > 0) ready_ = true;
            }
        }
        if (!m) continue;
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            // Transient errors are librdkafka's to retry; a fatal one ends the run.
            if (rd_kafka_fatal_error(consumer_.get(), nullptr, 0) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                error_ = rd_kafka_message_errstr(m.get());
                failed_ = true;
                return;
            }
            continue;
        }
        const auto produced_ms = rd_kafka_message_timestamp(m.get(), nullptr);
        if (produced_ms >= 0)
            samples_.emplace_back(produced_ms * 1000,
                                  static_cast<double>(now - produced_ms * 1000) / 1000.0);
        received_.fetch_add(1);
    }
}

}  // namespace exo::bench
