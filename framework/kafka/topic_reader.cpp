#include "kafka/topic_reader.hpp"

#include <unistd.h>
#include <algorithm>
#include <climits>

#include "kafka/kafka_logging.hpp"
#include "kafka/kafka_names.hpp"
#include "kafka/record_copy.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

int to_timeout_ms(std::chrono::milliseconds timeout) {
    return static_cast<int>(
        std::clamp<std::chrono::milliseconds::rep>(timeout.count(), 0, INT_MAX));
}

std::chrono::milliseconds left(Clock::time_point deadline) {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

TopicReader::TopicReader(const std::string& bootstrap_servers,
                         const std::map<std::string, std::string>& properties)
    : security_(properties) {
    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    set_kafka_property(conf.get(), "bootstrap.servers", bootstrap_servers);
    for (const auto& [name, value] : properties)
        if (!is_reserved_consumer_property(name)) set_kafka_property(conf.get(), name, value);
    // librdkafka refuses assign() without a group id; assigning never joins the
    // group and auto-commit is off, so this group is never seen by the brokers.
    set_kafka_property(conf.get(), "group.id", "exo-tools-" + std::to_string(::getpid()));
    set_kafka_property(conf.get(), "enable.auto.commit", "false");
    set_kafka_property(conf.get(), "enable.auto.offset.store", "false");
    set_kafka_property(conf.get(), "enable.partition.eof", "false");
    rd_kafka_conf_set_error_cb(conf.get(), &TopicReader::error_trampoline);
    rd_kafka_conf_set_opaque(conf.get(), this);
    char reason[512] = {0};
    handle_.reset(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), reason, sizeof reason));
    if (!handle_)
        throw KafkaConfigError(std::string("Kafka reader could not be created: ") + reason +
                               "; fix the kafka properties");
    static_cast<void>(conf.release());  // rd_kafka_new took it
}

TopicReader::~TopicReader() {
    rd_kafka_consumer_close(handle_.get());
}

void TopicReader::error_trampoline(rd_kafka_t*, int err, const char* reason, void* opaque) {
    auto* self = static_cast<TopicReader*>(opaque);
    const auto code = static_cast<rd_kafka_resp_err_t>(err);
    try {
        if (self->security_failure_) return;
        self->security_failure_ = self->security_.failure(
            code, reason != nullptr ? reason : rd_kafka_err2str(code), "the reader");
    } catch (...) {
        // Out of memory: nothing to do; a C++ exception must not unwind through librdkafka.
    }
}

void TopicReader::throw_if_security_failure() {
    rd_kafka_poll(handle_.get(), 0);  // serves the error callback
    if (security_failure_) throw *security_failure_;
}

void TopicReader::check(rd_kafka_resp_err_t code, const std::string& doing) {
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    throw_if_security_failure();
    throw_if_kafka_error(code, doing);
}

int TopicReader::partition_count(const std::string& topic, std::chrono::milliseconds timeout) {
    const rd_kafka_metadata_t* raw = nullptr;
    // The first call of every read, so in slices: a security failure reported meanwhile
    // ends the wait (librdkafka would wait out the timeout, retrying the login).
    const auto deadline = Clock::now() + timeout;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    do {
        throw_if_security_failure();
        err = rd_kafka_metadata(handle_.get(), 1, nullptr, &raw,
                                std::clamp(to_timeout_ms(left(deadline)), 0, 500));
    } while (err != RD_KAFKA_RESP_ERR_NO_ERROR && kafka_error_is_retriable(err) &&
             Clock::now() < deadline);
    check(err, "reading the metadata of topic '" + topic + "'");
    MetadataHandle metadata(raw);
    for (int i = 0; i < metadata->topic_cnt; ++i) {
        const auto& t = metadata->topics[i];
        if (topic != t.topic) continue;
        throw_if_kafka_error(t.err, "reading the metadata of topic '" + topic + "'");
        return t.partition_cnt;
    }
    throw KafkaError(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
                     "topic '" + topic + "' does not exist in Kafka", false);
}

TopicReader::Range TopicReader::range(const std::string& topic, int partition,
                                      std::chrono::milliseconds timeout) {
    std::int64_t low = 0, high = 0;
    check(rd_kafka_query_watermark_offsets(handle_.get(), topic.c_str(), partition, &low, &high,
                                           to_timeout_ms(timeout)),
          "reading where topic '" + topic + "' partition " + std::to_string(partition) +
              " starts and ends");
    return {partition, low, high};
}

std::vector<Record> TopicReader::read(const std::string& topic, const std::vector<Range>& ranges,
                                      std::chrono::milliseconds timeout) {
    std::map<int, std::int64_t> next;  // partition -> next offset still to read
    TopicPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(ranges.size())));
    for (const auto& r : ranges) {
        if (r.from >= r.end) continue;
        rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), r.partition)->offset = r.from;
        next[r.partition] = r.from;
    }
    std::vector<Record> out;
    if (next.empty()) return out;
    throw_if_kafka_error(rd_kafka_assign(handle_.get(), list.get()),
                         "assigning topic '" + topic + "'");
    const auto deadline = Clock::now() + timeout;
    auto unfinished = [&] {
        for (const auto& r : ranges)
            if (next.contains(r.partition) && next[r.partition] < r.end) return true;
        return false;
    };
    while (unfinished()) {
        if (Clock::now() >= deadline) {
            rd_kafka_assign(handle_.get(), nullptr);
            throw_if_security_failure();
            throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT,
                             "reading topic '" + topic + "': not every record arrived within " +
                                 std::to_string(timeout.count()) + " ms; try again",
                             true);
        }
        MessageHandle m(rd_kafka_consumer_poll(handle_.get(), 100));
        if (!m) continue;
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (!kafka_error_is_retriable(m->err)) {
                rd_kafka_assign(handle_.get(), nullptr);
                throw_if_kafka_error(m->err, "reading topic '" + topic + "'");
            }
            continue;
        }
        Record r = copy_record(*m);
        // Compaction leaves gaps: the next offset to read is past this one, whatever it was.
        next[r.partition.value] = r.offset.value + 1;
        out.push_back(std::move(r));
    }
    rd_kafka_assign(handle_.get(), nullptr);
    std::stable_sort(out.begin(), out.end(), [](const Record& a, const Record& b) {
        return a.partition.value < b.partition.value;
    });
    return out;
}

std::vector<Record> TopicReader::read_all(const std::string& topic,
                                          std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::vector<Range> ranges;
    const int partitions = partition_count(topic, timeout);
    ranges.reserve(static_cast<std::size_t>(partitions));
    for (int p = 0; p < partitions; ++p) ranges.push_back(range(topic, p, left(deadline)));
    return read(topic, ranges, left(deadline));
}

std::optional<Record> TopicReader::read_at(const std::string& topic, int partition,
                                           std::int64_t offset, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    Range r = range(topic, partition, timeout);
    if (offset < r.from || offset >= r.end) return std::nullopt;
    r.from = offset;
    r.end = offset + 1;
    for (auto& record : read(topic, {r}, left(deadline)))
        if (record.offset.value == offset) return std::move(record);
    return std::nullopt;  // compacted away: the first record read came after it
}

std::pair<std::int64_t, std::int64_t> TopicReader::watermarks(const std::string& topic,
                                                              int partition,
                                                              std::chrono::milliseconds timeout) {
    const Range r = range(topic, partition, timeout);
    return {r.from, r.end};
}

std::optional<std::int64_t> TopicReader::offset_for_time(const std::string& topic, int partition,
                                                         std::int64_t time_ms,
                                                         std::chrono::milliseconds timeout) {
    TopicPartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition)->offset = time_ms;
    check(rd_kafka_offsets_for_times(handle_.get(), list.get(), to_timeout_ms(timeout)),
          "finding the offset of time " + std::to_string(time_ms) + " in topic '" + topic +
              "' partition " + std::to_string(partition));
    throw_if_kafka_error(list->elems[0].err, "finding the offset of a time in topic '" + topic +
                                                 "' partition " + std::to_string(partition));
    const std::int64_t offset = list->elems[0].offset;
    return offset >= 0 ? std::optional<std::int64_t>(offset) : std::nullopt;
}

void TopicReader::scan(const std::string& topic, int partition, std::int64_t from, std::int64_t to,
                       std::size_t chunk_size, std::chrono::milliseconds idle_timeout,
                       const std::function<void(std::vector<Record>&)>& chunk) {
    if (to < from) return;
    TopicPartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition)->offset = from;
    throw_if_kafka_error(rd_kafka_assign(handle_.get(), list.get()),
                         "assigning topic '" + topic + "'");
    // Unassigned on every way out, so the next read starts clean.
    struct Unassign {
        rd_kafka_t* rk;
        ~Unassign() { rd_kafka_assign(rk, nullptr); }
    } unassign{handle_.get()};
    std::vector<Record> pending;
    pending.reserve(chunk_size);
    std::int64_t next = from;
    auto idle_since = Clock::now();
    while (next <= to) {
        MessageHandle m(rd_kafka_consumer_poll(handle_.get(), 100));
        if (!m) {
            // The last offsets may hold no record a consumer sees (a transaction's
            // commit marker, compaction): the position says the fetch went past them.
            TopicPartitionList position(rd_kafka_topic_partition_list_new(1));
            rd_kafka_topic_partition_list_add(position.get(), topic.c_str(), partition);
            if (rd_kafka_position(handle_.get(), position.get()) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                position->elems[0].offset > to)
                break;
            if (Clock::now() - idle_since >= idle_timeout) {
                throw_if_security_failure();
                throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT,
                                 "reading topic '" + topic + "' partition " +
                                     std::to_string(partition) + ": no record after offset " +
                                     std::to_string(next - 1) + " arrived within " +
                                     std::to_string(idle_timeout.count()) + " ms; try again",
                                 true);
            }
            continue;
        }
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (!kafka_error_is_retriable(m->err))
                throw_if_kafka_error(m->err, "reading topic '" + topic + "'");
            continue;
        }
        idle_since = Clock::now();
        // A message of an earlier assignment still queued, or one fetched again.
        if (m->partition != partition || topic != rd_kafka_topic_name(m->rkt) || m->offset < next)
            continue;
        if (m->offset > to) break;
        Record r = copy_record(*m);
        next = r.offset.value + 1;
        pending.push_back(std::move(r));
        if (pending.size() >= chunk_size) {
            chunk(pending);
            pending.clear();
        }
    }
    if (!pending.empty()) chunk(pending);
}

}  // namespace exo
