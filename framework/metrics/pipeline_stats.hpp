#pragma once
// Counters of what the pipeline did, shared by all batch runners (relaxed atomics:
// they are reports, not synchronization). Read by the metrics endpoint, the
// demo, tests and the bench.
//
// A record's outcome is counted in one place, record_finished(), when its outcome is
// durable (the runner hands its offset back). The other counters count events
// where they happen (a CONFLICT, a retry, a lease renewal, a pruned row).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "metrics/bucket_histogram.hpp"
#include "metrics/latency_histogram.hpp"

namespace exo {

// What retention pruning did, per table exo owns (retention/retention_pruner.hpp).
struct RetentionStats {
    enum Table : std::size_t {
        processed,
        sequence_gaps,
        outbox,
        outbox_keys,
        replays,
        dead_letters,
        kCount
    };
    static constexpr std::array<const char*, kCount> kNames = {"exo_processed", "exo_sequence_gaps",
                                                               "exo_outbox",    "exo_outbox_keys",
                                                               "exo_replays",   "exo_dead_letters"};

    std::array<std::atomic<std::uint64_t>, kCount> pruned{};  // rows deleted
    // How long the oldest expired row still there has been expired, as of the
    // pruner's last look; -1 until it looked (and always for exo_outbox_keys,
    // whose counters have no expiry time).
    std::array<std::atomic<std::int64_t>, kCount> lag_ms{-1, -1, -1, -1, -1, -1};
    std::atomic<std::uint64_t> failures{0};  // passes that failed (retried)
};

// Per bound topic: what exo_records_total{topic,outcome} and the histograms export.
struct TopicStats {
    std::array<std::atomic<std::uint64_t>, kOutcomes.size()> outcomes{};  // by Outcome
    std::atomic<std::uint64_t> parked{0};  // strict-sequence gaps set aside (events, not records)
    // Later copies of a key whose payload differed from the applied one's, under
    // on_key_reuse dead_letter or log (ignore counts nothing).
    std::atomic<std::uint64_t> key_reused{0};
    BucketHistogram handler_duration;  // handler time per record (a batch's share)
    BucketHistogram outside_duration;  // before_transaction() per call (its own thread's time)
    BucketHistogram record_latency;    // Kafka timestamp -> durable outcome

    std::uint64_t count(Outcome o) const {
        return outcomes[static_cast<std::size_t>(o)].load(std::memory_order_relaxed);
    }
};

class PipelineStats {
public:
    // `topics`: the bound topics, fixed for the life of the stats (so lookups
    // need no lock). A record of another topic is counted under "" (none is
    // expected: the consumer subscribes to the bound topics only).
    explicit PipelineStats(const std::vector<std::string>& topics = {});

    // The one place a record's outcome is counted: its outcome is durable.
    // `since_poll`: poll -> now; `since_produced`: the record's Kafka
    // timestamp -> now, when it has one.
    void record_finished(const std::string& topic, Outcome outcome,
                         std::chrono::microseconds since_poll,
                         std::optional<std::chrono::microseconds> since_produced);
    void parked_record(const std::string& topic, std::uint64_t n = 1) {
        topic_stats(topic).parked += n;
    }
    void key_reused(const std::string& topic) { topic_stats(topic).key_reused++; }
    // `took` for `records` records in one call: each record is observed with
    // its share, so the count is records handled and the sum the time spent,
    // for per-record and batch handlers alike.
    void handler_ran(const std::string& topic, std::chrono::microseconds took,
                     std::size_t records = 1) {
        if (records == 0) return;
        topic_stats(topic).handler_duration.observe(took / static_cast<std::int64_t>(records),
                                                    records);
    }

    // One before_transaction() call (exo/outside_transaction.hpp) that took `took`.
    void outside_ran(const std::string& topic, std::chrono::microseconds took) {
        topic_stats(topic).outside_duration.observe(took, 1);
    }

    const std::map<std::string, std::unique_ptr<TopicStats>>& topics() const { return topics_; }

    std::atomic<std::uint64_t> polled{0};
    // Totals over every topic, by outcome (also in topics()).
    std::atomic<std::uint64_t> applied{0};              // handler ran and committed
    std::atomic<std::uint64_t> duplicates_redis{0};     // answered by the Redis claim
    std::atomic<std::uint64_t> duplicates_postgres{0};  // caught by the dedup row
    std::atomic<std::uint64_t> duplicates_in_batch{0};  // a later copy of a key in its batch
    std::atomic<std::uint64_t> stale{0};                // older sequence: recorded, no effect
    std::atomic<std::uint64_t> dead_lettered{0};        // recorded and produced as dead letters
    // Events.
    std::atomic<std::uint64_t> conflicts{0};             // NACKed: another owner held the key
    std::atomic<std::uint64_t> retries{0};               // retryable failures retried
    std::atomic<std::uint64_t> dead_letter_failures{0};  // DLQ produce failed: kept, retried
    std::atomic<std::uint64_t> lost_completions{0};      // complete() found the claim taken over
    // claim.verify_duplicates: Redis DUPLICATE answers taken to PostgreSQL, and
    // those PostgreSQL contradicted (no dedup row: the record ran).
    std::atomic<std::uint64_t> redis_duplicates_verified{0};
    std::atomic<std::uint64_t> redis_duplicates_contradicted{0};
    std::atomic<std::uint64_t> lease_renewals{0};  // claims extended for slow handlers
    std::atomic<std::uint64_t> leases_lost{0};     // extension found the claim taken over
    std::atomic<std::uint64_t> assignments{0};     // rebalance callbacks that gave partitions
    std::atomic<std::uint64_t> revocations{0};     // ... and that took them (lost included)
    // Partitions read again from a held key's oldest spilled record
    // (scheduling/worker_inbox.hpp): one held key kept its records out of memory.
    std::atomic<std::uint64_t> reads_again{0};
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> batch_failures{0};  // whole batch put back (dependency down)
    std::atomic<std::uint64_t> redis_round_trips{0};
    std::atomic<std::uint64_t> postgres_round_trips{0};
    // Transactions whose framework SQL ran set-based
    // (docs/design.md#the-frameworks-sql-of-a-transactions-records-set-based).
    std::atomic<std::uint64_t> set_based_transactions{0};
    // Records a batch handler named as failed (BatchRecordFailed): taken out of
    // their transaction, which ran again without them.
    std::atomic<std::uint64_t> records_isolated{0};
    // before_transaction() calls that threw (each then failed its record).
    std::atomic<std::uint64_t> outside_failures{0};
    // The outbox relay (outbox/outbox_relay.hpp).
    std::atomic<std::uint64_t> outbox_published{0};  // rows Kafka acknowledged (then marked)
    std::atomic<std::uint64_t> outbox_failures{0};   // relay rounds that failed (retried)
    // Times a unit's head failed to publish (the unit was parked with backoff).
    std::atomic<std::uint64_t> outbox_unit_failures{0};
    // Gauges as of the relay's last look; outbox_pending is -1 until it first looked.
    std::atomic<std::int64_t> outbox_pending{-1};
    std::atomic<std::int64_t> outbox_oldest_pending_ms{0};  // age of the oldest pending row
    std::atomic<std::int64_t> outbox_parked_units{0};       // units whose head keeps failing
    RetentionStats retention;
    LatencyHistogram latency;  // poll -> durable outcome, per finished record (percentiles)

    std::uint64_t duplicates() const {
        return duplicates_redis + duplicates_postgres + duplicates_in_batch;
    }
    std::uint64_t finished() const { return applied + duplicates() + stale + dead_lettered; }
    std::string summary() const;

private:
    TopicStats& topic_stats(const std::string& topic);

    std::map<std::string, std::unique_ptr<TopicStats>> topics_;
    TopicStats* other_ = nullptr;  // topics_[""]
};

}  // namespace exo
