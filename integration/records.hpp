#pragma once
// What the pipeline tests share: a payment record on cue, waiting on a condition
// with a deadline (never a fixed sleep), and reading a topic back with a consumer
// of its own, outside any group.
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
#include "kafka/record_copy.hpp"
#include "payments_workload.hpp"
#include "support.hpp"

namespace exo::testing {

inline PaymentMessage payment(const std::string& event, const std::string& account,
                              std::int64_t amount, std::int64_t sequence, int partition = 0) {
    return {{event, account, "CREDIT", amount, sequence}, partition, false};
}

// Reads `topic` from the beginning, every partition, until `expected` records arrived
// or 30 s passed, each with its key, value, headers and timestamp (copy_record, as exo
// reads them). The partitions are assigned, not subscribed to: no group join (which
// takes about 3 s on the mock cluster) and nothing committed.
inline std::vector<Record> read_topic(const std::string& bootstrap, const std::string& topic,
                                      std::size_t expected) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    char reason[512];
    const std::string group = unique_name("reader");  // assign() needs one, never joins it
    for (const auto& [name, value] :
         std::vector<std::pair<const char*, const char*>>{{"bootstrap.servers", bootstrap.c_str()},
                                                          {"group.id", group.c_str()},
                                                          {"enable.auto.commit", "false"},
                                                          {"fetch.wait.max.ms", "20"}})
        if (rd_kafka_conf_set(conf.get(), name, value, reason, sizeof reason) != RD_KAFKA_CONF_OK)
            throw std::runtime_error(reason);
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), reason, sizeof reason));
    if (!rk) throw std::runtime_error(reason);
    static_cast<void>(conf.release());  // owned by rk
    rd_kafka_poll_set_consumer(rk.get());

    const rd_kafka_metadata_t* md = nullptr;
    auto err = rd_kafka_metadata(rk.get(), 1, nullptr, &md, 10000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("metadata of " + topic + ": " + rd_kafka_err2str(err));
    int partitions = 0;
    for (int i = 0; i < md->topic_cnt; ++i)
        if (topic == md->topics[i].topic) partitions = md->topics[i].partition_cnt;
    rd_kafka_metadata_destroy(md);
    TopicPartitionList list(rd_kafka_topic_partition_list_new(partitions));
    for (int p = 0; p < partitions; ++p)
        rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    err = rd_kafka_assign(rk.get(), list.get());
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("assign " + topic + ": " + rd_kafka_err2str(err));

    std::vector<Record> got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (got.size() < expected && std::chrono::steady_clock::now() < deadline) {
        MessageHandle m(rd_kafka_consumer_poll(rk.get(), 100));
        if (!m || m->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
        got.push_back(copy_record(*m));  // key, value, headers and timestamp, as exo reads them
    }
    rd_kafka_consumer_close(rk.get());
    return got;
}

// A bare librdkafka client of `type` for the tests' own look-ups (watermarks,
// metadata, admin requests), its logs captured with the test's. Throws
// std::runtime_error with librdkafka's reason.
inline KafkaHandle test_client(const std::string& bootstrap, rd_kafka_type_t type) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    char reason[512];
    if (rd_kafka_conf_set(conf.get(), "bootstrap.servers", bootstrap.c_str(), reason,
                          sizeof reason) != RD_KAFKA_CONF_OK)
        throw std::runtime_error(reason);
    KafkaHandle rk(rd_kafka_new(type, conf.get(), reason, sizeof reason));
    if (!rk) throw std::runtime_error(reason);
    static_cast<void>(conf.release());  // owned by rk
    return rk;
}

// How many records partition `partition` of `topic` holds (its high watermark):
// counts what was produced without waiting for records that never come.
inline std::int64_t partition_end(const std::string& bootstrap, const std::string& topic,
                                  int partition = 0) {
    const KafkaHandle rk = test_client(bootstrap, RD_KAFKA_CONSUMER);
    std::int64_t low = 0, high = 0;
    auto err =
        rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), partition, &low, &high, 10000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("watermarks of " + topic + ": " + rd_kafka_err2str(err));
    return high;
}

// The offset `group` committed for one partition of `topic` (the next offset it will
// read), or -1 while it committed none: read from the broker, as a new member would.
inline std::int64_t committed_offset(const std::string& bootstrap, const std::string& group,
                                     const std::string& topic, int partition) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    char reason[512];
    for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{
             {"bootstrap.servers", bootstrap.c_str()}, {"group.id", group.c_str()}})
        if (rd_kafka_conf_set(conf.get(), name, value, reason, sizeof reason) != RD_KAFKA_CONF_OK)
            throw std::runtime_error(reason);
    KafkaHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), reason, sizeof reason));
    if (!rk) throw std::runtime_error(reason);
    static_cast<void>(conf.release());  // owned by rk
    TopicPartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition);
    auto err = rd_kafka_committed(rk.get(), list.get(), 10000);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) err = list->elems[0].err;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error("committed offset of " + group + " on " + topic + ": " +
                                 rd_kafka_err2str(err));
    return list->elems[0].offset < 0 ? -1 : list->elems[0].offset;
}

inline std::string header(const Record& r, const char* name) {
    auto* h = r.header(name);
    return h && h->value ? *h->value : "(missing)";
}

// The last header of `name`, as exo's readers take it (docs/operations.md,
// "Security: forged headers"); nullptr when there is none.
inline const RecordHeader* last_header(const Record& r, const std::string& name) {
    const RecordHeader* found = nullptr;
    for (const auto& h : r.headers)
        if (h.name == name) found = &h;
    return found;
}

// A payment as the demo's producers write it, as JSON text: for records
// produced by hand (with headers of the test's choosing, or to a dead-letter topic).
inline std::string payment_json(const std::string& event, const std::string& account, int amount) {
    return R"({"eventId":")" + event + R"(","accountId":")" + account +
           R"(","type":"CREDIT","amount":)" + std::to_string(amount) + R"(,"sequenceId":1})";
}

}  // namespace exo::testing
