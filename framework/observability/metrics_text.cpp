#include "observability/metrics_text.hpp"

#include <fmt/format.h>

#include <iterator>

namespace exo {
namespace {

class Writer {
public:
    void family(const char* name, const char* type, const char* help) {
        fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name,
                       type);
    }
    void sample(const std::string& name, const std::string& labels, double value) {
        if (labels.empty())
            fmt::format_to(std::back_inserter(out_), "{} {}\n", name, value);
        else
            fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, value);
    }
    void sample(const std::string& name, const std::string& labels, std::uint64_t value) {
        if (labels.empty())
            fmt::format_to(std::back_inserter(out_), "{} {}\n", name, value);
        else
            fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, value);
    }
    void histogram(const std::string& name, const std::string& labels,
                   const BucketHistogram::Snapshot& s) {
        const std::string sep = labels.empty() ? "" : ",";
        for (std::size_t i = 0; i < BucketHistogram::kBounds.size(); ++i)
            sample(name + "_bucket",
                   labels + sep + fmt::format("le=\"{}\"", BucketHistogram::kBounds[i]),
                   s.cumulative[i]);
        sample(name + "_bucket", labels + sep + "le=\"+Inf\"", s.count());
        sample(name + "_sum", labels, s.sum_seconds);
        sample(name + "_count", labels, s.count());
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

std::string topic_label(const std::string& topic) {
    return "topic=\"" + escape_label_value(topic) + "\"";
}

std::string partition_labels(const TopicPartition& tp) {
    return topic_label(tp.topic.value) + fmt::format(",partition=\"{}\"", tp.partition.value);
}

struct Counter {
    const char* name;
    const char* help;
    const std::atomic<std::uint64_t>& value;
};

void retention(Writer& w, const RetentionStats& r) {
    using T = RetentionStats;
    auto table = [](std::size_t t) {
        return std::string("table=\"") + RetentionStats::kNames[t] + "\"";
    };
    w.family("exo_rows_pruned_total", "counter", "Rows deleted by retention, per table.");
    for (std::size_t t = 0; t < T::kCount; ++t)
        w.sample("exo_rows_pruned_total", table(t), r.pruned[t].load());
    // The name before exo_rows_pruned_total, kept for dashboards that use it.
    w.family("exo_dedup_rows_pruned_total", "counter",
             "Dedup rows and gap sightings deleted by retention (exo_rows_pruned_total of "
             "exo_processed and exo_sequence_gaps).");
    w.sample("exo_dedup_rows_pruned_total", "",
             r.pruned[T::processed].load() + r.pruned[T::sequence_gaps].load());
    w.family("exo_retention_failures_total", "counter",
             "Retention passes that failed (retried with backoff).");
    w.sample("exo_retention_failures_total", "", r.failures.load());
    w.family("exo_retention_lag_seconds", "gauge",
             "How long the oldest expired row still present has been expired (0: retention "
             "keeps up), per table, as of the pruner's last look.");
    for (std::size_t t = 0; t < T::kCount; ++t)
        if (const auto lag = r.lag_ms[t].load(); lag >= 0)
            w.sample("exo_retention_lag_seconds", table(t), static_cast<double>(lag) / 1000.0);
}

}  // namespace

std::string escape_label_value(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string render_metrics(const PipelineStats& stats, const DaemonStatus& status, bool ready,
                           const std::string& version) {
    Writer w;
    w.family("exo_build_info", "gauge", "The running exo's version (always 1).");
    w.sample("exo_build_info", "version=\"" + escape_label_value(version) + "\"", std::uint64_t{1});

    // The "" topic (records of no bound topic) is shown only if it ever counted.
    auto shown = [](const std::string& topic, const TopicStats& t) {
        if (!topic.empty()) return true;
        for (auto o : kOutcomes)
            if (t.count(o) > 0) return true;
        return t.parked.load() > 0;
    };
    w.family("exo_records_total", "counter",
             "Records by durable outcome (parked: strict-sequence gaps set aside, an event).");
    for (const auto& [topic, t] : stats.topics()) {
        if (!shown(topic, *t)) continue;
        for (auto o : kOutcomes)
            w.sample("exo_records_total", topic_label(topic) + ",outcome=\"" + to_string(o) + "\"",
                     t->count(o));
        w.sample("exo_records_total", topic_label(topic) + ",outcome=\"parked\"", t->parked.load());
    }
    w.family("exo_key_reuse_total", "counter",
             "Later copies of a key whose payload differed from the applied copy's "
             "(bindings[].on_key_reuse dead_letter or log).");
    for (const auto& [topic, t] : stats.topics())
        if (shown(topic, *t) || t->key_reused.load() > 0)
            w.sample("exo_key_reuse_total", topic_label(topic), t->key_reused.load());

    const Counter counters[] = {
        {"exo_records_polled_total", "Records fetched from Kafka and handed to a worker.",
         stats.polled},
        {"exo_batches_total", "Batches run by the workers.", stats.batches},
        {"exo_conflicts_total", "Records NACKed because another owner held the key or a row lock.",
         stats.conflicts},
        {"exo_retries_total", "Retryable failures retried after a backoff.", stats.retries},
        {"exo_batch_failures_total", "Batches put back whole (a dependency or a step failed).",
         stats.batch_failures},
        {"exo_records_isolated_total",
         "Records a batch handler named as failed; their batch ran again without them.",
         stats.records_isolated},
        {"exo_outside_failures_total",
         "Handlers' before_transaction() calls that threw; each fails its record where handle() "
         "would have run, unless the record turned out a duplicate or stale.",
         stats.outside_failures},
        {"exo_lost_completions_total",
         "Completions that found the claim taken over (PostgreSQL decided).",
         stats.lost_completions},
        {"exo_redis_duplicates_verified_total",
         "Redis DUPLICATE answers checked against the dedup rows (claim.verify_duplicates).",
         stats.redis_duplicates_verified},
        {"exo_redis_duplicates_contradicted_total",
         "Redis DUPLICATE answers with no dedup row behind them: the record ran; someone wrote "
         "under the claim prefix, or Redis holds another database's claims.",
         stats.redis_duplicates_contradicted},
        {"exo_lease_renewals_total", "Claims extended for slow batches.", stats.lease_renewals},
        {"exo_leases_lost_total", "Lease extensions that found the claim taken over.",
         stats.leases_lost},
        {"exo_dead_letter_failures_total",
         "Dead letters that could not be recorded or produced (kept and retried).",
         stats.dead_letter_failures},
        {"exo_outbox_published_total",
         "Emitted records the outbox relay published and Kafka acknowledged.",
         stats.outbox_published},
        {"exo_outbox_failures_total",
         "Outbox relay rounds that failed or had a row Kafka did not take; retried with backoff.",
         stats.outbox_failures},
        {"exo_outbox_unit_failures_total",
         "Times the head row of a (topic, key) failed to publish; the key was parked with "
         "backoff, the others went on.",
         stats.outbox_unit_failures},
        {"exo_rebalance_assignments_total", "Rebalances that gave this member partitions.",
         stats.assignments},
        {"exo_rebalance_revocations_total", "Rebalances that took partitions (lost included).",
         stats.revocations},
        {"exo_partition_reads_again_total",
         "Partitions read again from Kafka for records a held key spilled out of memory.",
         stats.reads_again},
    };
    for (const auto& c : counters) {
        w.family(c.name, "counter", c.help);
        w.sample(c.name, "", c.value.load());
    }
    retention(w, stats.retention);

    w.family("exo_handler_duration_seconds", "histogram",
             "Handler time per record: handle(), or a handle_batch() call's time shared by its "
             "records.");
    for (const auto& [topic, t] : stats.topics())
        if (shown(topic, *t))
            w.histogram("exo_handler_duration_seconds", topic_label(topic),
                        t->handler_duration.snapshot());
    w.family("exo_outside_duration_seconds", "histogram",
             "Time of handlers' before_transaction() calls, work done outside the transaction "
             "(topics whose handler has any).");
    for (const auto& [topic, t] : stats.topics())
        if (shown(topic, *t) && t->outside_duration.snapshot().count() > 0)
            w.histogram("exo_outside_duration_seconds", topic_label(topic),
                        t->outside_duration.snapshot());
    w.family("exo_record_latency_seconds", "histogram",
             "Kafka record timestamp to durable outcome.");
    for (const auto& [topic, t] : stats.topics())
        if (shown(topic, *t))
            w.histogram("exo_record_latency_seconds", topic_label(topic),
                        t->record_latency.snapshot());

    w.family("exo_consumer_lag", "gauge",
             "Records behind the partition's high watermark (librdkafka statistics).");
    std::uint64_t paused = 0;
    for (const auto& p : status.partitions) {
        if (p.paused) ++paused;
        if (p.lag)
            w.sample("exo_consumer_lag", partition_labels(p.partition),
                     static_cast<double>(*p.lag));
    }
    // A gauge per assigned partition, read from its status.
    const auto per_partition = [&](const char* name, const char* help, auto value) {
        w.family(name, "gauge", help);
        for (const auto& p : status.partitions)
            w.sample(name, partition_labels(p.partition), static_cast<std::uint64_t>(value(p)));
    };
    per_partition("exo_records_in_flight", "Records of the partition in a batch being run now.",
                  [](const PartitionStatus& p) { return p.in_flight; });
    per_partition("exo_records_queued",
                  "Records of the partition waiting for a batch (parked ones excluded).",
                  [](const PartitionStatus& p) { return p.queued; });
    per_partition("exo_records_bytes",
                  "Bytes of the partition's records waiting for a batch or in one, as "
                  "pipeline.max_queued_bytes_per_partition counts them.",
                  [](const PartitionStatus& p) { return p.bytes; });
    per_partition("exo_records_parked",
                  "Records of the partition parked on a strict-sequence gap (or back in a batch "
                  "to try again), as pipeline.max_parked_per_partition counts them.",
                  [](const PartitionStatus& p) { return p.parked; });
    per_partition("exo_records_parked_bytes",
                  "Their bytes, as pipeline.max_parked_bytes_per_partition counts them.",
                  [](const PartitionStatus& p) { return p.parked_bytes; });
    per_partition("exo_unfinished_window_offsets",
                  "Offsets from the partition's lowest unfinished record to its highest polled: "
                  "what a restart would read again.",
                  [](const PartitionStatus& p) { return p.unfinished_window; });
    const auto process_gauge = [&](const char* name, const char* help, std::size_t value) {
        w.family(name, "gauge", help);
        w.sample(name, "", static_cast<std::uint64_t>(value));
    };
    process_gauge("exo_batches_in_flight", "Batches being run now (at most pipeline.concurrency).",
                  status.batches_in_flight);
    process_gauge("exo_held_lanes",
                  "Lanes (a partition, or one ordering key of it) held by a record that retries "
                  "later (NACK, retry) or is stalled.",
                  status.held_lanes);
    process_gauge("exo_records_waiting_behind_held",
                  "Records queued in held lanes behind the record that holds each.",
                  status.waiting_behind_held);
    process_gauge("exo_keys_waiting_behind_held",
                  "Distinct Kafka keys among those records, the holding record's left out: keys "
                  "another key's retries hold up (ordering: key would let them pass).",
                  status.keys_waiting_behind_held);
    w.family("exo_partitions_assigned", "gauge", "Partitions assigned to this member.");
    w.sample("exo_partitions_assigned", "", static_cast<std::uint64_t>(status.partitions.size()));
    w.family("exo_partitions_paused", "gauge",
             "Assigned partitions whose fetching is paused (queue full).");
    w.sample("exo_partitions_paused", "", paused);
    w.family("exo_dependency_up", "gauge",
             "1 when the dependency answered on its last use, else 0.");
    if (status.redis_used)
        w.sample("exo_dependency_up", "dependency=\"redis\"", std::uint64_t{status.redis_up});
    w.sample("exo_dependency_up", "dependency=\"postgres\"", std::uint64_t{status.postgres_up});
    w.sample("exo_dependency_up", "dependency=\"kafka\"", std::uint64_t{status.kafka_up});
    // Shown once this daemon's relay has looked (none runs with outbox.enabled false).
    if (const auto pending = stats.outbox_pending.load(); pending >= 0) {
        w.family("exo_outbox_pending_rows", "gauge",
                 "Emitted records of this group committed and not yet published.");
        w.sample("exo_outbox_pending_rows", "", static_cast<std::uint64_t>(pending));
        w.family("exo_outbox_oldest_pending_seconds", "gauge",
                 "Age of the oldest emitted record not yet published (0: none).");
        w.sample("exo_outbox_oldest_pending_seconds", "",
                 static_cast<double>(stats.outbox_oldest_pending_ms.load()) / 1000.0);
        w.family("exo_outbox_parked_units", "gauge",
                 "(topic, key) units of this group whose head row keeps failing to publish "
                 "(exo outbox list).");
        w.sample("exo_outbox_parked_units", "",
                 static_cast<std::uint64_t>(stats.outbox_parked_units.load()));
    }
    w.family("exo_ready", "gauge", "1 while /readyz answers 200.");
    w.sample("exo_ready", "", std::uint64_t{ready});
    return w.take();
}

}  // namespace exo
