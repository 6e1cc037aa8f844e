#include "kafka/consumer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <string_view>
#include <utility>

#include "kafka/kafka_logging.hpp"
#include "kafka/kafka_names.hpp"
#include "kafka/record_copy.hpp"

namespace exo {
namespace {

int to_timeout_ms(std::chrono::milliseconds timeout) {
    return static_cast<int>(
        std::clamp<std::chrono::milliseconds::rep>(timeout.count(), 0, INT_MAX));
}

std::string describe(const TopicPartition& tp) {
    return tp.topic.value + "[" + std::to_string(tp.partition.value) + "]";
}

std::string describe(const std::vector<TopicPartition>& partitions) {
    std::string out;
    for (const auto& tp : partitions) {
        if (!out.empty()) out += ", ";
        out += describe(tp);
    }
    return out.empty() ? "(none)" : out;
}

std::vector<TopicPartition> to_vector(const rd_kafka_topic_partition_list_t* list) {
    std::vector<TopicPartition> out;
    if (list == nullptr) return out;
    out.reserve(static_cast<std::size_t>(list->cnt));
    for (int i = 0; i < list->cnt; ++i)
        out.push_back({Topic{list->elems[i].topic}, Partition{list->elems[i].partition}});
    return out;
}

TopicPartitionList to_list(const std::vector<TopicPartition>& partitions) {
    TopicPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (const auto& tp : partitions)
        rd_kafka_topic_partition_list_add(list.get(), tp.topic.value.c_str(), tp.partition.value);
    return list;
}

// The first partition a librdkafka call marked as failed, if any.
const rd_kafka_topic_partition_t* first_failed(const rd_kafka_topic_partition_list_t* list) {
    if (list == nullptr) return nullptr;
    for (int i = 0; i < list->cnt; ++i)
        if (list->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) return &list->elems[i];
    return nullptr;
}

std::string describe(const rd_kafka_topic_partition_t& p) {
    return std::string(p.topic) + "[" + std::to_string(p.partition) + "]";
}

void throw_first_partition_error(const rd_kafka_topic_partition_list_t* list,
                                 const std::string& doing) {
    if (const auto* failed = first_failed(list))
        throw_if_kafka_error(failed->err, doing + " (partition " + describe(*failed) + ")");
}

}  // namespace

KafkaConsumer::KafkaConsumer(const ConsumerOptions& options, RebalanceListener& listener)
    : listener_(listener), group_id_(options.group_id), security_(options.properties) {
    for (const auto& [name, value] : options.properties)
        if (is_reserved_consumer_property(name))
            throw KafkaConfigError(
                "Kafka property '" + name +
                "' cannot be set in the kafka properties: exo sets it itself (group.id comes "
                "from the consumer group setting; offsets are committed only after a "
                "record's outcome is durable); remove it");
    if (options.group_id.empty())
        throw KafkaConfigError("Kafka consumer: the consumer group id is empty; set it");
    if (options.topics.empty())
        throw KafkaConfigError("Kafka consumer of group '" + options.group_id +
                               "': no topics to subscribe to; bind at least one topic");

    KafkaConf conf(rd_kafka_conf_new());
    route_kafka_logs(conf.get());
    set_kafka_property(conf.get(), "bootstrap.servers", options.bootstrap_servers);
    set_kafka_property(conf.get(), "group.id", options.group_id);
    set_kafka_property(conf.get(), "enable.auto.commit", "false");
    set_kafka_property(conf.get(), "enable.auto.offset.store", "false");
    set_kafka_property(conf.get(), "enable.partition.eof", "false");
    set_kafka_property(conf.get(), "auto.offset.reset", "earliest");  // default; may be overridden
    for (const auto& [name, value] : options.properties)
        set_kafka_property(conf.get(), name, value);
    rd_kafka_conf_set_rebalance_cb(conf.get(), &KafkaConsumer::rebalance_trampoline);
    rd_kafka_conf_set_error_cb(conf.get(), &KafkaConsumer::error_trampoline);
    on_commit_answered_ = options.on_commit_answered;
    if (options.on_statistics) {
        on_statistics_ = options.on_statistics;
        rd_kafka_conf_set_stats_cb(conf.get(), &KafkaConsumer::statistics_trampoline);
    }
    rd_kafka_conf_set_opaque(conf.get(), this);

    char reason[512] = {0};
    handle_.reset(rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), reason, sizeof reason));
    if (!handle_)
        throw KafkaConfigError("Kafka consumer of group '" + options.group_id +
                               "' could not be created: " + reason + "; fix the kafka properties");
    static_cast<void>(conf.release());  // rd_kafka_new took it

    // From here a failure must close the handle while the members its callbacks
    // use still exist (no destructor runs for a throwing constructor).
    auto close_and_throw = [this](rd_kafka_resp_err_t err, const std::string& doing) {
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
        closed_ = true;
        rd_kafka_consumer_close(handle_.get());
        throw_if_kafka_error(err, doing);
    };
    // One queue for messages, rebalances and errors, all served by rd_kafka_consumer_poll.
    close_and_throw(
        rd_kafka_poll_set_consumer(handle_.get()),
        "redirecting the main queue of group '" + group_id_ + "' to the consumer queue");
    queue_.reset(rd_kafka_queue_get_consumer(handle_.get()));

    TopicPartitionList topics(
        rd_kafka_topic_partition_list_new(static_cast<int>(options.topics.size())));
    for (const auto& topic : options.topics)
        rd_kafka_topic_partition_list_add(topics.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
    close_and_throw(rd_kafka_subscribe(handle_.get(), topics.get()),
                    "subscribing group '" + group_id_ + "' to its topics");
}

KafkaConsumer::~KafkaConsumer() {
    try {
        close();
    } catch (const std::exception& e) {
        spdlog::error("Kafka consumer of group '{}': error while closing: {}", group_id_, e.what());
    } catch (...) {
        spdlog::error("Kafka consumer of group '{}': unknown error while closing", group_id_);
    }
}

std::vector<Record> KafkaConsumer::poll(std::size_t max_records,
                                        std::chrono::milliseconds timeout) {
    if (closed_)
        throw KafkaError(
            RD_KAFKA_RESP_ERR__STATE,
            "polling the closed consumer of group '" + group_id_ + "' (a bug in the caller)",
            false);
    if (failed_)
        throw KafkaError(RD_KAFKA_RESP_ERR__STATE,
                         "polling the consumer of group '" + group_id_ +
                             "' after a rebalance failure; close it and create a new one",
                         false);
    std::vector<Record> records;
    if (max_records == 0) return records;
    struct Collecting {  // forget() drops revoked partitions' records from `records`
        KafkaConsumer& consumer;
        ~Collecting() { consumer.collecting_ = nullptr; }
    } collecting{*this};
    collecting_ = &records;
    take_held(max_records, records);  // resumed partitions first: they are older

    std::vector<TopicPartition> repause;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    rd_kafka_t* rk = handle_.get();
    while (records.size() < max_records) {
        // Wait for the first record only; then take what is already there.
        int wait_ms = 0;
        if (records.empty())
            wait_ms = to_timeout_ms(std::chrono::ceil<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now()));
        MessageHandle message(rd_kafka_consumer_poll(rk, wait_ms));
        rethrow_failure();  // a rebalance callback inside that call failed
        if (!message) {
            if (wait_ms == 0) break;
            continue;  // woken without a message (e.g. after a rebalance): wait the rest
        }
        if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            deliver(copy_record(*message), records, repause);
            continue;
        }
        if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
        char fatal_reason[512] = {0};
        const rd_kafka_resp_err_t fatal =
            rd_kafka_fatal_error(rk, fatal_reason, sizeof fatal_reason);
        if (message->err == RD_KAFKA_RESP_ERR__FATAL || fatal != RD_KAFKA_RESP_ERR_NO_ERROR) {
            failed_ = true;
            throw KafkaError(fatal != RD_KAFKA_RESP_ERR_NO_ERROR ? fatal : message->err,
                             "consuming for group '" + group_id_ + "' (fatal error: " +
                                 fatal_reason + "); close this consumer and create a new one",
                             false);
        }
        // Transient (broker down, leader moving) or per-partition trouble librdkafka
        // keeps retrying itself: nothing was consumed, so nothing is skipped.
        if (message->rkt != nullptr)
            spdlog::warn("Kafka consumer of group '{}': {}[{}]: {}", group_id_,
                         rd_kafka_topic_name(message->rkt), message->partition,
                         rd_kafka_message_errstr(message.get()));
        else
            spdlog::warn("Kafka consumer of group '{}': {}", group_id_,
                         rd_kafka_message_errstr(message.get()));
    }
    // A rebalance inside this call may have revoked some; a pause left on an
    // unassigned partition would keep it paused if it came back.
    std::erase_if(repause, [this](const TopicPartition& tp) {
        auto it = assigned_.find(tp);
        return it == assigned_.end() || !it->second.paused;
    });
    pause_in_librdkafka(repause);
    return records;
}

void KafkaConsumer::deliver(Record record, std::vector<Record>& out,
                            std::vector<TopicPartition>& repause) {
    auto it = assigned_.find(record.topic_partition());
    if (it == assigned_.end()) {
        // Left over from a partition already revoked: its new owner reads it.
        spdlog::debug("Kafka consumer of group '{}': dropping a record of unassigned {}", group_id_,
                      describe(record.topic_partition()));
        return;
    }
    auto& state = it->second;
    state.fetching = true;
    state.next_offset = record.offset.value + 1;
    if (!state.paused) {
        out.push_back(std::move(record));
        return;
    }
    // The librdkafka pause was deferred (the fetcher had not started) or lost:
    // keep the record for resume() and pause now that the fetcher runs.
    state.held.push_back(std::move(record));
    if (std::find(repause.begin(), repause.end(), it->first) == repause.end())
        repause.push_back(it->first);
}

void KafkaConsumer::take_held(std::size_t max_records, std::vector<Record>& out) {
    for (auto& [tp, state] : assigned_) {
        while (!state.paused && !state.held.empty() && out.size() < max_records) {
            out.push_back(std::move(state.held.front()));
            state.held.pop_front();
        }
    }
}

void KafkaConsumer::pause_in_librdkafka(const std::vector<TopicPartition>& partitions) {
    if (partitions.empty()) return;
    auto list = to_list(partitions);
    const std::string doing = "pausing " + describe(partitions) + " for group '" + group_id_ + "'";
    throw_if_kafka_error(rd_kafka_pause_partitions(handle_.get(), list.get()), doing);
    throw_first_partition_error(list.get(), doing);
    for (const auto& tp : partitions)
        if (auto it = assigned_.find(tp); it != assigned_.end())
            it->second.paused_in_librdkafka = true;
}

void KafkaConsumer::forget(rd_kafka_t* rk, const std::vector<TopicPartition>& revoked) {
    if (collecting_ != nullptr)
        std::erase_if(*collecting_, [&](const Record& r) {
            return std::find(revoked.begin(), revoked.end(), r.topic_partition()) != revoked.end();
        });
    std::vector<TopicPartition> paused;
    for (const auto& tp : revoked) {
        auto it = assigned_.find(tp);
        if (it == assigned_.end()) continue;
        if (it->second.paused_in_librdkafka) paused.push_back(tp);
        assigned_.erase(it);  // held records go too: never returned, so never committed
    }
    // librdkafka keeps a partition paused across unassign/assign; it must start
    // fresh if it comes back. The unassign already queued its fetch stop, so this
    // resume is ordered after it.
    if (paused.empty()) return;
    auto list = to_list(paused);
    throw_if_kafka_error(
        rd_kafka_resume_partitions(rk, list.get()),
        "clearing the pause of revoked " + describe(paused) + " for group '" + group_id_ + "'");
}

void KafkaConsumer::pause(const std::vector<TopicPartition>& partitions) {
    std::vector<TopicPartition> now;
    for (const auto& tp : partitions) {
        auto it = assigned_.find(tp);
        if (it == assigned_.end()) continue;
        auto& state = it->second;
        state.paused = true;
        // Until a record arrived, the assignment's fetch start may still be in
        // flight: a pause now could be lost or drop it (see PartitionState).
        if (state.fetching && !state.paused_in_librdkafka) now.push_back(tp);
    }
    pause_in_librdkafka(now);
}

void KafkaConsumer::resume(const std::vector<TopicPartition>& partitions) {
    std::vector<TopicPartition> restart;
    for (const auto& tp : partitions) {
        auto it = assigned_.find(tp);
        if (it == assigned_.end() || !it->second.paused) continue;
        it->second.paused = false;  // its held records are returned by the next poll()
        if (it->second.paused_in_librdkafka) restart.push_back(tp);
        it->second.paused_in_librdkafka = false;
    }
    if (restart.empty()) return;
    auto list = to_list(restart);
    const std::string doing = "resuming " + describe(restart) + " for group '" + group_id_ + "'";
    // Pause again first: it sets the resume position to just after the last record
    // polled. If the first pause was lost, resuming alone would restart from the
    // position of an older op and deliver records a second time.
    throw_if_kafka_error(rd_kafka_pause_partitions(handle_.get(), list.get()), doing);
    throw_first_partition_error(list.get(), doing);
    throw_if_kafka_error(rd_kafka_resume_partitions(handle_.get(), list.get()), doing);
    throw_first_partition_error(list.get(), doing);
    wake_fetcher(restart);
}

std::optional<Offset> KafkaConsumer::settled_position(const TopicPartition& tp) {
    auto it = assigned_.find(tp);
    if (it == assigned_.end() || !it->second.held.empty()) return std::nullopt;
    TopicPartitionList list(rd_kafka_topic_partition_list_new(1));
    auto* entry =
        rd_kafka_topic_partition_list_add(list.get(), tp.topic.value.c_str(), tp.partition.value);
    throw_if_kafka_error(
        rd_kafka_position(handle_.get(), list.get()),
        "reading the position of " + describe(tp) + " for group '" + group_id_ + "'");
    if (entry->err != RD_KAFKA_RESP_ERR_NO_ERROR || entry->offset < 0) return std::nullopt;
    return Offset{entry->offset};
}

void KafkaConsumer::rewind(const TopicPartition& tp, Offset offset) {
    auto it = assigned_.find(tp);
    if (it == assigned_.end() || !it->second.fetching) return;
    // A resume seeks to next_offset (wake_fetcher): it must not undo the rewind.
    it->second.held.clear();
    it->second.next_offset = offset.value;
    TopicPartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.value.c_str(), tp.partition.value)
        ->offset = offset.value;
    // Timeout 0: asynchronous. librdkafka raises the partition's op version at
    // once, so records fetched before this call are not returned after it.
    throw_if_kafka_error(rd_kafka_seek_partitions(handle_.get(), list.get(), 0),
                         "reading " + describe(tp) + " again from offset " +
                             std::to_string(offset.value) + " for group '" + group_id_ + "'");
}

void KafkaConsumer::wake_fetcher(const std::vector<TopicPartition>& resumed) {
    // librdkafka 2.0.2 serves a resume on its main thread and does not wake the
    // broker thread that fetches the partition (rd_kafka_toppar_pause_resume): when
    // every partition that thread fetches was paused, it sleeps up to a second
    // (rd_kafka_max_block_ms) before it fetches again, and the workers run dry
    // meanwhile. A seek wakes it ("seek done" in rd_kafka_toppar_seek); one to the
    // position the resume fetches from anyway changes nothing else. Best effort:
    // without it the fetch still resumes within that second. The position is
    // kept here rather than asked of rd_kafka_position(), which a seek leaves
    // unset until the partition's next record is polled.
    TopicPartitionList seek(rd_kafka_topic_partition_list_new(static_cast<int>(resumed.size())));
    for (const auto& tp : resumed) {
        auto it = assigned_.find(tp);
        // Nothing handed over yet: librdkafka resolves the start itself on resume.
        if (it == assigned_.end() || !it->second.next_offset) continue;
        rd_kafka_topic_partition_list_add(seek.get(), tp.topic.value.c_str(), tp.partition.value)
            ->offset = *it->second.next_offset;
    }
    if (seek->cnt == 0) return;
    // Timeout 0: asynchronous, and no error is reported (librdkafka's contract).
    if (rd_kafka_error_t* error = rd_kafka_seek_partitions(handle_.get(), seek.get(), 0))
        rd_kafka_error_destroy(error);
}

namespace {

// Filled by rd_kafka_commit_queue's callback on the committing thread; the
// callback is the only way to see per-partition results of a commit.
struct SyncCommitResult {
    rd_kafka_resp_err_t partition_error = RD_KAFKA_RESP_ERR_NO_ERROR;
    std::string failed_partition;
};

void sync_commit_done(rd_kafka_t*, rd_kafka_resp_err_t, rd_kafka_topic_partition_list_t* offsets,
                      void* opaque) {
    auto* result = static_cast<SyncCommitResult*>(opaque);
    if (const auto* failed = first_failed(offsets)) {
        result->partition_error = failed->err;
        result->failed_partition = describe(*failed);
    }
}

}  // namespace

void KafkaConsumer::commit(const std::vector<OffsetToCommit>& offsets, bool synchronous) {
    if (offsets.empty()) return;
    TopicPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
    std::string what;
    for (const auto& o : offsets) {
        rd_kafka_topic_partition_list_add(list.get(), o.partition.topic.value.c_str(),
                                          o.partition.partition.value)
            ->offset = o.next.value;
        if (!what.empty()) what += ", ";
        what += describe(o.partition) + "@" + std::to_string(o.next.value);
    }
    const std::string doing = "committing offsets " + what + " for group '" + group_id_ + "'";
    if (!synchronous) {
        // The outcome is posted to queue_ and logged by async_commit_done from poll().
        throw_if_kafka_error(rd_kafka_commit_queue(handle_.get(), list.get(), queue_.get(),
                                                   &KafkaConsumer::async_commit_done, this),
                             "queueing " + doing);
        return;
    }
    SyncCommitResult result;
    // No queue: librdkafka waits for the broker and calls back before returning.
    throw_if_kafka_error(
        rd_kafka_commit_queue(handle_.get(), list.get(), nullptr, &sync_commit_done, &result),
        doing);
    if (result.partition_error != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw_if_kafka_error(result.partition_error,
                             doing + " (partition " + result.failed_partition + ")");
}

void KafkaConsumer::async_commit_done(rd_kafka_t*, rd_kafka_resp_err_t err,
                                      rd_kafka_topic_partition_list_t* offsets, void* opaque) {
    const auto* self = static_cast<const KafkaConsumer*>(opaque);
    const auto* failed = first_failed(offsets);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || failed != nullptr)
        // Not fatal: a later commit covers the same offsets (they only grow), and the
        // synchronous commit on revoke or shutdown reports its own failure.
        spdlog::warn("Kafka consumer of group '{}': asynchronous offset commit failed{}: {}",
                     self->group_id_, failed ? " for " + describe(*failed) : std::string(),
                     rd_kafka_err2str(failed ? failed->err : err));
    if (!self->on_commit_answered_) return;
    try {
        std::vector<OffsetToCommit> accepted;
        for (int i = 0; err == RD_KAFKA_RESP_ERR_NO_ERROR && offsets != nullptr && i < offsets->cnt;
             ++i) {
            const auto& p = offsets->elems[i];
            if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR || p.offset < 0) continue;
            accepted.push_back({{Topic{p.topic}, Partition{p.partition}}, Offset{p.offset}});
        }
        self->on_commit_answered_(accepted);
    } catch (const std::exception& e) {
        // Only a report is lost: the caller sees the offsets as not yet committed
        // and commits them again.
        spdlog::warn("Kafka consumer of group '{}': an asynchronous commit's result: {}",
                     self->group_id_, e.what());
    } catch (...) {
        spdlog::warn(
            "Kafka consumer of group '{}': an asynchronous commit's result: a non-std "
            "exception",
            self->group_id_);
    }
}

std::vector<OffsetToCommit> KafkaConsumer::committed(const std::vector<TopicPartition>& partitions,
                                                     std::chrono::milliseconds timeout) {
    std::vector<OffsetToCommit> out;
    if (partitions.empty()) return out;
    auto list = to_list(partitions);
    const std::string doing = "reading the committed offsets of " + describe(partitions) +
                              " for group '" + group_id_ + "'";
    throw_if_kafka_error(rd_kafka_committed(handle_.get(), list.get(), to_timeout_ms(timeout)),
                         doing);
    throw_first_partition_error(list.get(), doing);
    out.reserve(partitions.size());
    for (int i = 0; i < list->cnt; ++i)
        out.push_back({{Topic{list->elems[i].topic}, Partition{list->elems[i].partition}},
                       Offset{list->elems[i].offset}});
    return out;
}

void KafkaConsumer::close() {
    if (closed_) return;
    closed_ = true;
    // Serves the final revoke (the listener commits inside) and leaves the group;
    // bounded by roughly session.timeout.ms.
    const rd_kafka_resp_err_t err = rd_kafka_consumer_close(handle_.get());
    rethrow_failure();
    throw_if_kafka_error(err, "closing the consumer of group '" + group_id_ + "'");
}

void KafkaConsumer::rebalance_trampoline(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                         rd_kafka_topic_partition_list_t* partitions,
                                         void* opaque) {
    auto* self = static_cast<KafkaConsumer*>(opaque);
    try {
        self->on_rebalance(rk, err, partitions);
    } catch (...) {
        // A C++ exception must not unwind through librdkafka's C frames.
        self->remember_failure(std::current_exception());
    }
}

void KafkaConsumer::error_trampoline(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    auto* self = static_cast<KafkaConsumer*>(opaque);
    const auto code = static_cast<rd_kafka_resp_err_t>(err);
    const std::string_view why = reason != nullptr ? reason : rd_kafka_err2str(code);
    try {
        // No retry gets past it: poll() (or close()) throws it. librdkafka keeps
        // reconnecting meanwhile and reports it again; the first one is kept.
        if (auto failure = self->security_.failure(
                code, why, "the consumer of group '" + self->group_id_ + "'")) {
            self->remember_failure(std::make_exception_ptr(*failure));
            return;
        }
        // What librdkafka logs itself when no error callback is set.
        kafka_logger()->error("ERROR [{}] {}", rd_kafka_name(rk), why);
    } catch (...) {
        // Out of memory: nothing to do; a C++ exception must not unwind through librdkafka.
    }
}

int KafkaConsumer::statistics_trampoline(rd_kafka_t*, char* json, std::size_t len, void* opaque) {
    auto* self = static_cast<KafkaConsumer*>(opaque);
    try {
        self->on_statistics_(std::string_view(json, len));
    } catch (const std::exception& e) {
        // Statistics are a report: a reading that cannot be used is skipped.
        spdlog::warn("librdkafka statistics skipped: {}", e.what());
    } catch (...) {
        spdlog::warn("librdkafka statistics skipped: a non-std exception");
    }
    return 0;  // librdkafka frees the JSON
}

void KafkaConsumer::on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                 rd_kafka_topic_partition_list_t* partitions) {
    const char* protocol = rd_kafka_rebalance_protocol(rk);
    const bool cooperative = protocol != nullptr && std::string_view(protocol) == "COOPERATIVE";
    auto changed = to_vector(partitions);

    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        const std::string doing =
            "assigning " + describe(changed) + " to group '" + group_id_ + "' member";
        // Assign first: once on_assigned runs, the listener may pause these partitions.
        if (cooperative)
            throw_if_kafka_error(rd_kafka_incremental_assign(rk, partitions), doing);
        else
            throw_if_kafka_error(rd_kafka_assign(rk, partitions), doing);
        for (const auto& tp : changed) assigned_[tp] = PartitionState{};
        // Cooperative rebalances often assign nothing new: not worth an info line.
        spdlog::log(changed.empty() ? spdlog::level::debug : spdlog::level::info,
                    "Kafka consumer {} of group '{}': assigned {} ({})", rd_kafka_name(rk),
                    group_id_, describe(changed), cooperative ? "cooperative" : "eager");
        listener_.on_assigned(changed);  // even empty: the member joined its group
        return;
    }

    if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        const bool lost = rd_kafka_assignment_lost(rk) != 0;
        spdlog::info("Kafka consumer {} of group '{}': {} {}", rd_kafka_name(rk), group_id_,
                     lost ? "lost" : "revoking", describe(changed));
        // The listener commits synchronously before the partitions go; whatever it
        // throws, they must still be unassigned to keep librdkafka's state right.
        try {
            if (!changed.empty()) listener_.on_revoked(changed, lost);
        } catch (...) {
            remember_failure(std::current_exception());
        }
        const std::string doing =
            "unassigning " + describe(changed) + " from group '" + group_id_ + "' member";
        if (cooperative) {
            KafkaErrorHandle error(rd_kafka_incremental_unassign(rk, partitions));
            forget(rk, changed);
            throw_if_kafka_error(error.release(), doing);
        } else {
            const rd_kafka_resp_err_t err = rd_kafka_assign(rk, nullptr);
            forget(rk, changed);
            throw_if_kafka_error(err, doing);
        }
        return;
    }

    // Any other error: librdkafka asks for the assignment to be cleared
    // (rd_kafka_assign(rk, NULL), whatever the protocol) to resynchronise.
    spdlog::error("Kafka consumer of group '{}': rebalance failed: {}; dropping the assignment",
                  group_id_, rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_t* current = nullptr;
    std::vector<TopicPartition> assigned;
    if (rd_kafka_assignment(rk, &current) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        TopicPartitionList owned(current);
        assigned = to_vector(owned.get());
    }
    try {
        if (!assigned.empty()) listener_.on_revoked(assigned, true);
    } catch (...) {
        remember_failure(std::current_exception());
    }
    const rd_kafka_resp_err_t cleared = rd_kafka_assign(rk, nullptr);
    std::vector<TopicPartition> all;
    for (const auto& [tp, state] : assigned_) all.push_back(tp);
    forget(rk, all);
    throw_if_kafka_error(cleared, "clearing the assignment of group '" + group_id_ + "' member");
}

void KafkaConsumer::remember_failure(std::exception_ptr failure) noexcept {
    if (!failure_) failure_ = std::move(failure);
}

void KafkaConsumer::rethrow_failure() {
    if (!failure_) return;
    failed_ = true;
    std::rethrow_exception(std::exchange(failure_, nullptr));
}

}  // namespace exo
