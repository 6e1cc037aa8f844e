#pragma once
// The long-lived consumer: one poll thread (this object's run()) and the batch
// runners (worker.hpp: one lane scheduler feeding pipeline.concurrency runners).
// The poll thread owns the KafkaConsumer, hands records to the scheduler,
// pauses partitions whose queue is full (so it can keep polling
// and never exceeds max.poll.interval.ms), and commits, per partition, the
// lowest unfinished offset. Rebalances and shutdown drain the same way: drop
// queued records, wait for in-flight batches (pipeline.shutdown_timeout), commit
// synchronously.
//
// Lifecycle: construct -> run(stop) (returns after a clean drain; throws on a
// fatal Kafka error) -> destroy. Thread-safety: run() on one thread; stats(),
// ready() and status() from any thread.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/failpoints.hpp"
#include "core/offset_tracker.hpp"
#include "kafka/consumer.hpp"
#include "kafka/consumer_statistics.hpp"
#include "metrics/pipeline_stats.hpp"
#include "observability/observed_daemon.hpp"
#include "outbox/outbox_doorbell.hpp"
#include "protocol/handler_registry.hpp"
#include "runtime/worker.hpp"
#include "scheduling/commit_schedule.hpp"
#include "scheduling/pause_policy.hpp"
#include "scheduling/read_again.hpp"

namespace exo {

class Daemon final : public ObservedDaemon, private RebalanceListener {
public:
    // `bootstrap_servers` is the resolved address (the config's, or an embedded
    // mock cluster's). `stats` (counted into by the runners and the poll loop) and
    // `outbox_doorbell` (the process's relay's, rung after a COMMIT that emitted;
    // nullptr: no relay) outlive the daemon: the composition root owns them and
    // the relay and pruner beside it (app/consumer_process.hpp). Throws
    // KafkaConfigError for bad librdkafka properties.
    Daemon(const Config& config, const HandlerRegistry& handlers, Failpoints& failpoints,
           std::string bootstrap_servers, PipelineStats& stats, OutboxDoorbell* outbox_doorbell);
    ~Daemon() override;

    void run(std::stop_token stop);

    const PipelineStats& stats() const override { return stats_; }
    // Partitions assigned and the runners' dependencies answering.
    bool ready() const { return ready_.load(); }
    // What the daemon does, as of its poll loop's last snapshot (a few hundred
    // milliseconds old at most) and its last turn (live).
    DaemonStatus status() const override;

private:
    void on_assigned(const std::vector<TopicPartition>& partitions) override;
    void on_revoked(const std::vector<TopicPartition>& partitions, bool lost) override;

    void dispatch(std::vector<Record> records);
    // Records queued or in a batch (parked ones excluded).
    std::size_t records_in_flight() const;
    // Their bytes (scheduling/record_limits.hpp), kept by the inbox as records
    // come and go: no walk of the records.
    std::size_t bytes_in_flight() const;
    void update_pauses(std::size_t in_flight, std::size_t bytes_in_flight);
    // Poll thread: commits asynchronously when commit_schedule_ says so (every
    // commit interval, and soon after the pipeline drains), so a caught-up
    // consumer's lag reads 0 at once and a restart re-reads nothing, while the
    // broker's answer is awaited by no record.
    void commit_when_due(std::size_t in_flight);
    // Commits what is finished (of every assigned partition, or only `only`):
    // synchronously (revoke, shutdown: the offsets are marked committed when this
    // returns) or queued (marked when the broker's answer arrives). Returns whether
    // a commit was sent or queued. A synchronous failure is logged, not thrown.
    bool commit_finished(bool synchronous, const std::vector<TopicPartition>* only);
    // The broker's answer to an asynchronous commit (poll thread, inside poll()).
    void on_commit_answered(const std::vector<OffsetToCommit>& accepted);
    void drain(const std::vector<TopicPartition>& partitions, const char* why);
    void update_readiness();
    // Poll thread: publishes a new status snapshot when the last is older than
    // its interval (or at once with `now`).
    void publish_status(bool now = false);

    const Config& config_;
    std::string bootstrap_;
    PipelineStats& stats_;
    std::atomic<bool> ready_{false};
    bool ready_logged_ = false;

    std::mutex offsets_mutex_;
    OffsetTracker offsets_;  // guarded by offsets_mutex_

    std::set<TopicPartition> assigned_;  // poll thread only
    // Records finished (the runners count them), and, poll thread only, when the
    // next commit is due.
    std::atomic<std::uint64_t> finished_records_{0};
    std::optional<CommitSchedule> commit_schedule_;
    PausePolicy pauses_{PauseLimits::of(config_.pipeline)};  // poll thread only
    // Held keys' spilled records (worker_inbox.hpp) read again: poll thread only.
    ReadAgain read_again_;
    std::map<std::string, const BindingConfig*> binding_of_;  // by topic
    bool joined_ = false;                                 // poll thread only: an assignment came
    std::optional<ConsumerStatistics> kafka_statistics_;  // poll thread only: the last reading
    std::chrono::steady_clock::time_point status_published_{};  // poll thread only

    mutable std::mutex status_mutex_;
    DaemonStatus status_;  // guarded by status_mutex_
    std::atomic<std::chrono::steady_clock::rep> last_poll_{0};

    // Destruction order: the consumer goes first (its close() calls on_revoked,
    // which uses the runners), then the runners, then the lease renewer.
    // One thread and one Redis connection renew every runner's claims; after the
    // runners go (declared before them).
    LeaseRenewer lease_renewer_;
    std::unique_ptr<BatchRunners> runners_;
    std::optional<KafkaConsumer> consumer_;
};

}  // namespace exo
