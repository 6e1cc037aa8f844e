#pragma once
// The Kafka consumer exo drives: explicit offset commits only
// (enable.auto.commit=false, enable.auto.offset.store=false), rebalances
// reported to a listener from inside poll(), eager and cooperative assignors.
//
// Lifecycle: construct (subscribes) -> poll()... -> close() (leaves the group;
// the listener's on_revoked runs for everything still assigned) -> destroy.
// Thread-safety: every method must be called from one thread (the poll thread);
// the listener runs on that thread, inside poll() or close().
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/record.hpp>
#include "core/offset_to_commit.hpp"
#include "kafka/kafka_error.hpp"
#include "kafka/rdkafka_handles.hpp"

namespace exo {

class RebalanceListener {
public:
    virtual ~RebalanceListener() = default;
    // Partitions newly assigned (incrementally for cooperative assignors);
    // possibly none: the group has this member, with nothing (new) for it.
    virtual void on_assigned(const std::vector<TopicPartition>& partitions) = 0;
    // Partitions about to be taken away: the listener must stop using them and
    // commit their offsets (synchronously, via commit()) before returning. `lost`
    // is true when the group already gave them to someone else: committing then fails.
    virtual void on_revoked(const std::vector<TopicPartition>& partitions, bool lost) = 0;
};

struct ConsumerOptions {
    std::string bootstrap_servers;
    std::string group_id;
    std::vector<std::string> topics;
    std::map<std::string, std::string> properties;  // extra librdkafka properties
    // Set: librdkafka's statistics JSON, every statistics.interval.ms (which
    // the caller sets in `properties`), on the poll thread inside poll().
    std::function<void(std::string_view json)> on_statistics{};
    // Set: called once per asynchronous commit() when its answer arrives, with the
    // offsets it made durable (the partitions the broker accepted: none when the
    // request failed; a refusal is logged), on the poll thread inside poll() or
    // close(). What it throws is logged and dropped.
    std::function<void(const std::vector<OffsetToCommit>& accepted)> on_commit_answered{};
};

class KafkaConsumer {
public:
    // Throws KafkaConfigError for a bad property, KafkaError if subscribing fails.
    KafkaConsumer(const ConsumerOptions& options, RebalanceListener& listener);
    KafkaConsumer(const KafkaConsumer&) = delete;
    KafkaConsumer& operator=(const KafkaConsumer&) = delete;
    ~KafkaConsumer();  // closes if close() was not called

    // Up to `max_records` records, waiting at most `timeout` for the first one
    // (max_records 0 returns at once and serves nothing).
    // Also serves rebalance callbacks. Per-record consume errors that are not fatal
    // (partition EOF, transient broker errors) are logged and skipped; fatal ones throw
    // KafkaError. So does a failure of the security settings (SecuritySettings in
    // kafka_error.hpp: the broker refused the SASL login, or its TLS certificate could not be
    // verified), at the first poll() after librdkafka reported it, not retriable, and the
    // consumer is then failed as below. If the listener throws (or librdkafka refuses an assignment
    // change), the rebalance is still completed and poll() rethrows that exception; the consumer is
    // then failed: records fetched in that call are dropped and every later poll() throws
    // KafkaError, so the caller must close it and start over (no offset was committed past the
    // dropped records, so they are redelivered).
    std::vector<Record> poll(std::size_t max_records, std::chrono::milliseconds timeout);

    // Once pause() returns, poll() returns no record of these partitions until
    // resume(), including records librdkafka had already fetched: those are held here
    // and returned, in order and without gaps or repeats, after resume(). May be called
    // from the listener. Partitions not currently assigned are ignored. A revoke drops
    // the pause (a partition assigned again starts unpaused). Throws KafkaError if
    // librdkafka refuses.
    void pause(const std::vector<TopicPartition>& partitions);
    void resume(const std::vector<TopicPartition>& partitions);

    // Where the next record of `tp` would come from: one past the last record or
    // transaction marker librdkafka served, if every record before it was returned
    // by poll() (none held for a pause); nullopt otherwise, or when librdkafka
    // knows no position (none served since the assignment or a rewind). Past the
    // last record it can include a trailing commit or abort marker, which no
    // record stands for: committing there is what makes a transactional topic's
    // lag read 0. Throws KafkaError if librdkafka refuses.
    std::optional<Offset> settled_position(const TopicPartition& tp);

    // Reads `tp` again from `offset`: the next records of it poll() returns start
    // there (a pause stays; records held for it are dropped, and librdkafka drops
    // what it had fetched before). For reading back records the caller let go of
    // (scheduling/read_again.hpp). Ignored for a partition not assigned or not
    // fetching yet. Throws KafkaError if librdkafka refuses.
    void rewind(const TopicPartition& tp, Offset offset);

    // Commits exactly these offsets; an empty list is a no-op. synchronous=true blocks
    // until the broker answered and throws KafkaError on failure (of the request or of
    // any one partition); false queues it and returns at once: a later poll() (or
    // close()) logs a failure and hands the partitions the broker accepted to
    // ConsumerOptions::on_commit_answered. Only a refusal to queue throws.
    void commit(const std::vector<OffsetToCommit>& offsets, bool synchronous);
    // The group's committed offsets for these partitions (for tests and tools);
    // Offset{RD_KAFKA_OFFSET_INVALID} (-1001) where nothing was committed. Throws KafkaError.
    std::vector<OffsetToCommit> committed(const std::vector<TopicPartition>& partitions,
                                          std::chrono::milliseconds timeout);

    // Leaves the group (the listener's on_revoked runs inside). Idempotent. Throws
    // what the listener threw during the close, or KafkaError if leaving failed; the
    // consumer is closed either way.
    void close();

private:
    static void rebalance_trampoline(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                     rd_kafka_topic_partition_list_t* partitions, void* opaque);
    static int statistics_trampoline(rd_kafka_t* rk, char* json, std::size_t len, void* opaque);
    // librdkafka's client errors (a broker connection failed, ...): served by
    // rd_kafka_consumer_poll and rd_kafka_consumer_close, on the poll thread.
    static void error_trampoline(rd_kafka_t* rk, int err, const char* reason, void* opaque);
    static void async_commit_done(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                  rd_kafka_topic_partition_list_t* offsets, void* opaque);
    // Runs inside rd_kafka_consumer_poll or rd_kafka_consumer_close (never inside
    // rd_kafka_destroy: the consumer is always closed first, while every member the
    // callback touches still exists).
    void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t* partitions);
    void remember_failure(std::exception_ptr failure) noexcept;
    void rethrow_failure();
    // Routes one fetched record: to `out`, or held back if its partition is paused.
    void deliver(Record record, std::vector<Record>& out, std::vector<TopicPartition>& repause);
    void take_held(std::size_t max_records, std::vector<Record>& out);
    void pause_in_librdkafka(const std::vector<TopicPartition>& partitions);
    // Wakes the broker threads that fetch the `resumed` partitions (see the .cpp).
    void wake_fetcher(const std::vector<TopicPartition>& resumed);
    void forget(rd_kafka_t* rk, const std::vector<TopicPartition>& revoked);

    // librdkafka 2.0.2 gives every pause/resume and the assignment's fetch start a
    // version and silently drops an op older than the last one served
    // (confluentinc/librdkafka#2190, #5591). A pause racing the fetch start of a new
    // assignment is then lost, or it drops the fetch start and the partition never
    // fetches again. So the librdkafka pause is only issued once a record of the
    // partition arrived (its fetcher has started), records of paused partitions are
    // held here, and a lost pause is noticed by a record arriving and issued again.
    struct PartitionState {
        bool fetching = false;              // a record arrived since it was assigned
        bool paused = false;                // paused by the caller
        bool paused_in_librdkafka = false;  // rd_kafka_pause_partitions was issued
        std::deque<Record> held;            // fetched while paused, not yet returned
        // One past the last record librdkafka handed over (returned or held): where
        // a resume fetches from. Unset until the first record.
        std::optional<std::int64_t> next_offset;
    };

    RebalanceListener& listener_;
    std::string group_id_;
    SecuritySettings security_;
    std::function<void(std::string_view)> on_statistics_;
    std::function<void(const std::vector<OffsetToCommit>&)> on_commit_answered_;
    // Destruction order: the queue and messages must be gone before the handle is
    // closed and destroyed, so handle_ is declared first (destroyed last).
    KafkaHandle handle_;
    // The consumer queue (the main queue is forwarded to it): async commit results
    // are posted here with a callback that rd_kafka_consumer_poll serves.
    QueueHandle queue_;
    // The first exception thrown inside a librdkafka callback (which must not unwind
    // through C frames); rethrown by poll() or close().
    std::exception_ptr failure_;
    bool failed_ = false;  // a failure_ was rethrown: the consumer is unusable
    // The records poll() is collecting, while it runs: a revoke inside it drops
    // the revoked partitions' records from there too. Returned after a
    // re-assignment within the same call, they would be tracked above where the
    // new assignment starts fetching, and committed past the records between.
    std::vector<Record>* collecting_ = nullptr;
    std::map<TopicPartition, PartitionState> assigned_;  // the current assignment
    bool closed_ = false;
};

}  // namespace exo
