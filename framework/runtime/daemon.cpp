#include "runtime/daemon.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <random>

#include "core/log_context.hpp"
#include "kafka/kafka_names.hpp"
#include "scheduling/ordering_key.hpp"
#include "scheduling/record_limits.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

std::string owner_prefix(const std::string& group) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    std::random_device rd;
    // Random part: a restarted process must never reuse a dead one's owner id.
    return group + "@" + host + ":" + std::to_string(::getpid()) + ":" + std::to_string(rd());
}

std::string describe(const std::vector<TopicPartition>& parts) {
    std::string s;
    for (const auto& tp : parts) {
        if (!s.empty()) s += ", ";
        s += tp.topic.value + "[" + std::to_string(tp.partition.value) + "]";
    }
    return s.empty() ? "none" : s;
}

// A malformed traceparent is the sender's slip, not the record's failure: the
// record goes on under a new trace, and this says why for whoever follows it.
void log_unused_traceparent(const PendingRecord& pending) {
    if (!spdlog::should_log(spdlog::level::debug)) return;
    const auto problem = traceparent_problem(pending.record);
    if (!problem) return;
    const auto& r = pending.record;
    LogContext log_context(r.topic, r.partition, r.offset, std::nullopt, &pending.trace);
    spdlog::debug(
        "the record's traceparent header is not valid W3C trace context ({}): it "
        "starts a new trace",
        *problem);
}

}  // namespace

Daemon::Daemon(const Config& config, const HandlerRegistry& handlers, Failpoints& failpoints,
               std::string bootstrap_servers, PipelineStats& stats, OutboxDoorbell* outbox_doorbell)
    : config_(config),
      bootstrap_(std::move(bootstrap_servers)),
      stats_(stats),
      lease_renewer_(config_.redis, config_.claim.lease, config_.kafka.group_id, stats_,
                     spdlog::default_logger()->clone("leases")) {
    for (const auto& b : config.bindings) binding_of_.emplace(b.topic, &b);
    // The runners create their dead-letter producers at their first dead
    // letter: one made and dropped here refuses a bad property at start-up.
    { const KafkaProducer checked(dead_letter_producer(bootstrap_, config.kafka)); }
    runners_ = std::make_unique<BatchRunners>(RunnersContext{
        config_, handlers, dead_letter_producer(bootstrap_, config.kafka), stats_, failpoints,
        [this](const std::vector<FinishedOffset>& done) {
            {
                std::lock_guard lock(offsets_mutex_);
                for (const auto& f : done) offsets_.finish(f.partition, f.offset);
            }
            finished_records_ += done.size();
        },
        owner_prefix(config.kafka.group_id), lease_renewer_, outbox_doorbell});
}

Daemon::~Daemon() {
    // close() runs on_revoked, which commits through consumer_: do it while the
    // optional still holds the consumer (run() normally did it already).
    if (consumer_) {
        try {
            consumer_->close();
        } catch (const std::exception& e) {
            spdlog::warn("closing the consumer: {}", e.what());
        }
    }
    consumer_.reset();
    runners_->request_stop();
    runners_.reset();
}

void Daemon::run(std::stop_token stop) {
    ConsumerOptions options{
        bootstrap_, config_.kafka.group_id, config_.binding_topics(), config_.kafka.properties, {}};
    if (config_.observability.enabled()) {
        // The consumer lag and broker state of /metrics; a user's own interval wins.
        options.properties.try_emplace("statistics.interval.ms", "5000");
        options.on_statistics = [this](std::string_view json) {
            kafka_statistics_ = parse_consumer_statistics(json);
        };
    }
    options.on_commit_answered = [this](const std::vector<OffsetToCommit>& accepted) {
        on_commit_answered(accepted);
    };
    consumer_.emplace(options, static_cast<RebalanceListener&>(*this));
    runners_->start();
    std::string topics;
    for (const auto& t : options.topics) topics += (topics.empty() ? "" : ", ") + t;
    spdlog::info("consuming {} as group '{}' with {} batch runner(s)", topics,
                 config_.kafka.group_id, runners_->runners());

    commit_schedule_.emplace(config_.kafka.commit_interval, Clock::now());
    // Two batches' worth a turn, as the two workers of earlier versions took:
    // more would only make the turns (pauses, commits, status) further apart.
    const std::size_t poll_max =
        static_cast<std::size_t>(std::max(config_.pipeline.batch_size * 2, 100));
    while (!stop.stop_requested()) {
        last_poll_ = Clock::now().time_since_epoch().count();
        dispatch(consumer_->poll(poll_max, std::chrono::milliseconds(50)));
        const auto in_flight = records_in_flight();
        update_pauses(in_flight, bytes_in_flight());
        update_readiness();
        publish_status();
        commit_when_due(in_flight);
    }

    spdlog::info("stopping: draining {} partition(s)", assigned_.size());
    drain(std::vector<TopicPartition>(assigned_.begin(), assigned_.end()), "shutdown");
    consumer_->close();  // leaves the group; on_revoked runs for what is still assigned
    runners_->request_stop();
    runners_->join();
    ready_ = false;
    {
        std::lock_guard lock(status_mutex_);
        status_.running = false;
    }
    spdlog::info("stopped: {}", stats_.summary());
}

void Daemon::dispatch(std::vector<Record> records) {
    if (records.empty()) return;
    // Ordering keys first, outside the offsets lock: ordering: entity parses
    // every payload, and every runner's finish waits on that lock.
    std::vector<PendingRecord> fresh;
    fresh.reserve(records.size());
    // Re-reads by read-again window (one per partition at a time).
    std::map<std::uint64_t, std::vector<PendingRecord>> rereads;
    struct Closed {
        TopicPartition partition;
        Offset end;
        std::uint64_t window;
    };
    std::vector<Closed> closed;
    const auto now = Clock::now();
    for (auto& r : records) {
        // Records fetched before a revoke that happened within the same poll.
        const auto tp = r.topic_partition();
        if (!assigned_.contains(tp)) continue;
        const auto seen = read_again_.fetched(tp, r.offset, now);
        if (seen.closed_window_end)
            closed.push_back({tp, *seen.closed_window_end, seen.closed_window});
        const bool reread = seen.kind == ReadAgain::Fetched::reread;
        auto& p = (reread ? rereads[seen.window] : fresh).emplace_back(PendingRecord{std::move(r)});
        // Before anything else reads them: a flood of headers leaves memory now.
        refuse_excess_headers(p, static_cast<std::size_t>(config_.pipeline.max_headers_per_record));
        if (auto b = binding_of_.find(p.record.topic.value); b != binding_of_.end())
            p.ordering_key = ordering_key(*b->second, p.record);
        if (!reread) log_unused_traceparent(p);
    }
    // Re-reads before fresh records: they are older, and a lane they empty of
    // spilled records takes its fresh ones again. They were tracked when first
    // fetched (still unfinished if spilled); spilled records a window proved
    // gone from Kafka are finished: nothing can apply them.
    std::vector<FinishedOffset> gone;
    auto& inbox = runners_->inbox();
    for (auto& [window, batch] : rereads) {
        auto lost = inbox.push_rereads(std::move(batch), window);
        gone.insert(gone.end(), lost.begin(), lost.end());
    }
    for (const auto& c : closed) {
        auto lost = inbox.forget_unread_spilled(c.partition, c.end, c.window);
        gone.insert(gone.end(), lost.begin(), lost.end());
    }
    {
        std::lock_guard lock(offsets_mutex_);
        for (const auto& p : fresh) offsets_.track(p.record.topic_partition(), p.record.offset);
        for (const auto& g : gone) offsets_.finish(g.partition, g.offset);
    }
    for (const auto& g : gone)
        spdlog::warn(
            "{}[{}] offset {}: a record held back for its key (spilled) is no longer in Kafka "
            "(compacted or deleted by retention before it was read again): skipped",
            g.partition.topic.value, g.partition.partition.value, g.offset.value);
    stats_.polled += fresh.size();
    inbox.push(std::move(fresh));
}

std::size_t Daemon::records_in_flight() const {
    return runners_->inbox().in_flight();
}

std::size_t Daemon::bytes_in_flight() const {
    return runners_->inbox().in_flight_bytes();
}

void Daemon::update_pauses(std::size_t total, std::size_t total_bytes) {
    auto& inbox = runners_->inbox();
    // Then no partition is near a bound and none has held keys' offsets to read
    // again: the walk below would find nothing to do.
    if (pauses_.quiet(total, total_bytes, inbox.spilled_total())) return;
    const auto now = Clock::now();
    std::map<TopicPartition, PartitionLoad> loads;
    for (const auto& tp : assigned_) {
        PartitionLoad load{inbox.queued(tp) + inbox.in_batch(tp),
                           inbox.queued_bytes(tp) + inbox.in_batch_bytes(tp), 0};
        // Held keys' own records do not count (worker_inbox.hpp): walked only
        // when it can matter.
        if (pauses_.near_bound(load.records, load.bytes) || inbox.spilled(tp) > 0) {
            const auto held = inbox.held_keys(tp);
            load.records -= std::min(load.records, held.queued);
            load.bytes -= std::min(load.bytes, held.queued_bytes);
            load.spilled_held = held.spilled;
            if (held.read_again_from && read_again_.open(tp, *held.read_again_from, now)) {
                consumer_->rewind(tp, *held.read_again_from);
                stats_.reads_again++;
            }
        }
        loads.emplace(tp, load);
    }
    const auto changes = pauses_.update(total, total_bytes, loads);
    if (!changes.pause.empty()) consumer_->pause(changes.pause);
    if (!changes.resume.empty()) consumer_->resume(changes.resume);
}

void Daemon::commit_when_due(std::size_t in_flight) {
    const auto now = Clock::now();
    // Counted, not sampled: a parked record taken and finished between two turns
    // of this loop is a drain too. A commit failing while idle waits for the
    // interval (nothing finished since it).
    const auto finished = finished_records_.load();
    if (!commit_schedule_->due(now, in_flight, finished)) return;
    commit_schedule_->sent(now, finished, commit_finished(false, nullptr));
}

void Daemon::on_commit_answered(const std::vector<OffsetToCommit>& accepted) {
    if (commit_schedule_) commit_schedule_->answered();
    // A partition revoked since is not tracked and is ignored; one assigned again
    // since is marked at most where the broker's offset already was (a commit only
    // moves forward, and the revoke committed at least this much).
    std::lock_guard lock(offsets_mutex_);
    offsets_.mark_committed(accepted);
}

bool Daemon::commit_finished(bool synchronous, const std::vector<TopicPartition>* only) {
    // Where the consumer would read next, for the partitions whose fetched
    // records may all be finished: past a transaction's trailing commit marker
    // there is no record to finish, and without this the group's lag would
    // stay 1 for good (a "stalled consumer" to lag monitors).
    std::vector<TopicPartition> idle;
    {
        std::lock_guard lock(offsets_mutex_);
        for (const auto& tp :
             only ? std::set<TopicPartition>(only->begin(), only->end()) : assigned_)
            if (assigned_.contains(tp) && offsets_.unfinished(tp) == 0) idle.push_back(tp);
    }
    // Only the poll thread tracks records, and this is it: none is added meanwhile.
    std::vector<std::pair<TopicPartition, Offset>> positions;
    for (const auto& tp : idle)
        if (auto position = consumer_->settled_position(tp)) positions.emplace_back(tp, *position);
    std::vector<OffsetToCommit> points;
    {
        std::lock_guard lock(offsets_mutex_);
        points = offsets_.committable(only);
        for (const auto& [tp, position] : positions) {
            auto past = offsets_.committable_at(tp, position);
            if (!past) continue;
            auto it = std::find_if(points.begin(), points.end(),
                                   [&](const OffsetToCommit& p) { return p.partition == tp; });
            if (it != points.end())
                it->next = past->next;
            else
                points.push_back(*past);
        }
    }
    if (points.empty()) return false;
    try {
        consumer_->commit(points, synchronous);
    } catch (const KafkaError& e) {
        // Not marked committed: the same offsets are tried again next time. A
        // redelivery meanwhile is harmless (duplicates are caught).
        spdlog::warn("offset commit failed, will retry: {}", e.what());
        return false;
    }
    if (!synchronous) return true;  // marked when the broker answers (on_commit_answered)
    std::lock_guard lock(offsets_mutex_);
    offsets_.mark_committed(points);
    return true;
}

void Daemon::drain(const std::vector<TopicPartition>& partitions, const char* why) {
    if (partitions.empty()) return;
    // The drop discards what is queued, so no runner starts another batch of
    // a revoked partition while an earlier one is being waited for.
    auto deadline = Clock::now() + config_.pipeline.shutdown_timeout;
    if (runners_->inbox().drop_partitions(partitions, deadline)) return;
    runners_->abandon_leases(partitions);
    spdlog::warn(
        "{}: a batch of {} did not finish within {} ms; its claims are abandoned "
        "and its records will be redelivered and deduplicated",
        why, describe(partitions), config_.pipeline.shutdown_timeout.count());
}

void Daemon::on_assigned(const std::vector<TopicPartition>& partitions) {
    joined_ = true;
    if (partitions.empty()) {  // a spare member, or a cooperative round with nothing new
        publish_status(true);
        return;
    }
    spdlog::info("assigned: {}", describe(partitions));
    stats_.assignments++;
    // The consumer drops a partition's pause on revoke, so a re-assigned one
    // arrives unpaused: only our own bookkeeping needs resetting.
    assigned_.insert(partitions.begin(), partitions.end());
    for (const auto& tp : partitions) {
        pauses_.forget(tp);
        read_again_.forget(tp);
    }
    publish_status(true);
}

void Daemon::on_revoked(const std::vector<TopicPartition>& partitions, bool lost) {
    spdlog::info("{}: {}", lost ? "lost" : "revoked", describe(partitions));
    stats_.revocations++;
    drain(partitions, lost ? "partitions lost" : "rebalance");
    if (!lost) commit_finished(true, &partitions);
    std::lock_guard lock(offsets_mutex_);
    for (const auto& tp : partitions) {
        offsets_.forget(tp);
        assigned_.erase(tp);
        pauses_.forget(tp);
        read_again_.forget(tp);
    }
    if (lost) joined_ = false;  // the group moved on without this member
}

void Daemon::update_readiness() {
    bool now_ready = runners_->healthy() && !assigned_.empty();
    if (now_ready != ready_.load() || !ready_logged_) {
        ready_ = now_ready;
        ready_logged_ = true;
        if (now_ready)
            spdlog::info("ready: {} partition(s) assigned, dependencies answering",
                         assigned_.size());
        else
            spdlog::warn("not ready: {}",
                         assigned_.empty()
                             ? "no partitions assigned"
                             : "a dependency is not answering, a handler cannot prepare, or a "
                               "partition is stalled (see the error above)");
    }
}

void Daemon::publish_status(bool now) {
    constexpr auto kInterval = std::chrono::milliseconds(250);
    const auto at = Clock::now();
    if (!now && at - status_published_ < kInterval) return;
    status_published_ = at;

    DaemonStatus s;
    s.running = true;
    s.joined = joined_;
    s.redis_used = config_.claim.in_redis();
    const auto& inbox = runners_->inbox();
    for (const auto& tp : assigned_) {
        PartitionStatus p;
        p.partition = tp;
        p.paused = pauses_.paused(tp);
        p.stalled = inbox.stalled(tp);
        p.queued = inbox.queued(tp);
        const auto parked = inbox.parked_load(tp);
        p.parked = parked.records;
        p.parked_bytes = parked.bytes;
        p.in_flight = inbox.in_batch(tp);
        p.bytes = inbox.queued_bytes(tp) + inbox.in_batch_bytes(tp);
        {
            std::lock_guard lock(offsets_mutex_);
            p.unfinished_window = offsets_.unfinished_window(tp);
            if (auto c = offsets_.committed(tp)) p.committed = c->value;
        }
        if (kafka_statistics_)
            if (auto it = kafka_statistics_->lag.find(tp); it != kafka_statistics_->lag.end())
                p.lag = it->second;
        s.partitions.push_back(std::move(p));
    }
    s.pipeline_healthy = runners_->healthy();
    for (std::size_t i = 0; i < runners_->runners(); ++i)
        s.runners.push_back({static_cast<int>(i), runners_->busy_since(i)});
    s.redis_up = runners_->redis_up();
    s.postgres_up = runners_->postgres_up();
    const auto t = inbox.totals();
    s.batches_in_flight = t.batches_out;
    s.held_lanes = t.held_lanes;
    s.waiting_behind_held = t.waiting_behind_held;
    s.keys_waiting_behind_held = t.keys_waiting_behind_held;
    // Before librdkafka's first statistics, an assignment proves a broker answered.
    s.kafka_up = kafka_statistics_ ? kafka_statistics_->brokers_up > 0 : joined_;
    std::lock_guard lock(status_mutex_);
    status_ = std::move(s);
}

DaemonStatus Daemon::status() const {
    DaemonStatus s;
    {
        std::lock_guard lock(status_mutex_);
        s = status_;
    }
    s.last_poll = Clock::time_point(Clock::duration(last_poll_.load()));
    return s;
}

}  // namespace exo
