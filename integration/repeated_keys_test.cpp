// A key that appears more than once in one batch (docs/design.md#key),
// against real Redis, PostgreSQL and the mock Kafka cluster: the first copy
// claims and runs, the later copies end as it did, in the same batch, or are
// requeued when it did not finish. The batches are made here and run through
// one worker's BatchProtocol, so which records share a batch is certain; the
// daemon tests run it end to end. A key's copies on two workers meet as a
// CONFLICT (docs/design.md#claim): the last tests keep that from feeding a storm.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/failpoints.hpp"
#include "dedup_rows.hpp"
#include "pipeline_harness.hpp"
#include "protocol/steps/hand_back.hpp"
#include "records.hpp"
#include "redis/claim_store.hpp"
#include "redis/redis_connection.hpp"
#include "runtime/batch_protocol.hpp"
#include "runtime/sessions/lease_keeper.hpp"
#include "support.hpp"
#include "test_handlers.hpp"

using namespace std::chrono_literals;
using exo::Outcome;
using exo::PaymentMessage;
using exo::StoredOutcome;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::processed;
using exo::testing::RunningDaemon;

namespace {

using Balances = std::map<std::string, std::int64_t>;

// One worker's protocol over the harness's servers, without its consumer or
// inbox: run() takes a batch through transact() and settle() as Worker does.
class ProtocolBench {
public:
    explicit ProtocolBench(PipelineHarness& h)
        : h_(h),
          stats_({h.topic()}),
          log_(spdlog::default_logger()->clone("repeated-keys-test")),
          owner_(exo::testing::unique_name("bench-owner")),
          protocol_(h.config(), h.registry(), exo::ProducerOptions{h.bootstrap(), {}}, stats_,
                    failpoints_, owner_, *log_),
          renewer_(h.config().redis, h.config().claim.lease, h.config().kafka.group_id, stats_,
                   log_),
          leases_(renewer_, owner_) {}

    // A batch of these payments, in this order (partition order is the caller's).
    std::unique_ptr<exo::Batch> run(const std::vector<PaymentMessage>& messages) {
        std::vector<exo::PendingRecord> taken;
        for (const auto& m : messages) {
            const int partition = m.partition.value_or(0);
            exo::PendingRecord p;
            p.record.topic = exo::Topic{h_.topic()};
            p.record.partition = exo::Partition{partition};
            p.record.offset = exo::Offset{next_offset_[partition]++};
            p.record.key = m.payment.account_id;
            p.record.value = m.payment.json();
            taken.push_back(std::move(p));
        }
        return rerun(std::move(taken));
    }
    // A batch of records handed back before (requeued), as the inbox gives them again.
    std::unique_ptr<exo::Batch> rerun(std::vector<exo::PendingRecord> taken) {
        auto batch = std::make_unique<exo::Batch>(std::move(taken));
        stats_.batches++;
        leases_.start_batch();
        REQUIRE(protocol_.transact(*batch, leases_) == exo::BatchEnd::went_through);
        protocol_.settle(*batch, leases_);
        return batch;
    }

    exo::PipelineStats& stats() { return stats_; }

private:
    PipelineHarness& h_;
    exo::PipelineStats stats_;
    exo::Failpoints failpoints_;
    std::shared_ptr<spdlog::logger> log_;
    std::string owner_;
    exo::BatchProtocol protocol_;
    exo::LeaseRenewer renewer_;
    exo::LeaseKeeper leases_;
    std::map<int, std::int64_t> next_offset_;
};

exo::BatchRecord& at(exo::Batch& batch, std::size_t n) {
    return *(batch.begin() + n);
}

// Another worker of the group, holding the claim on `key` until release().
class AnotherWorker {
public:
    AnotherWorker(const PipelineHarness& h, const std::string& key)
        : h_(h),
          redis_(exo::testing::redis_options()),
          claims_(redis_, h.config().redis.key_prefix, h.config().kafka.group_id, "another-worker"),
          key_(key) {
        const auto held = claims_.claim({key}, 30s);
        REQUIRE(held.front().status == exo::ClaimStatus::acquired);
        token_ = held.front().token;
    }
    void release() { claims_.release({{key_, token_}}); }
    // Whether anyone holds a claim record on `key` (PROCESSING or settled).
    bool claimed(const std::string& key) {
        const auto& c = h_.config();
        return redis_.command({"EXISTS", c.redis.key_prefix + ":" + c.kafka.group_id + ":" + key})
                   .integer == 1;
    }

private:
    const PipelineHarness& h_;
    exo::RedisConnection redis_;
    exo::ClaimStore claims_;
    std::string key_;
    exo::FencingToken token_{};
};

std::int64_t ledger_rows(const PipelineHarness& h, const std::string& event) {
    return h.count("SELECT count(*) FROM ledger_entries WHERE event_id = '" + event + "'");
}

}  // namespace

TEST_CASE(
    "a key twice in one batch, in its partition and in another, is claimed and applied once in "
    "one transaction; the later copies end in the same batch as duplicates with the first's "
    "result, and every offset is handed back finished") {
    PipelineHarness h({.name = "inbatch", .partitions = 2, .handler = "cue_batch_ledger"});
    ProtocolBench bench(h);
    auto batch = bench.run({payment("result-1", "acc-a", 1, 1, 0),
                            payment("result-1", "acc-a", 1, 1, 0),  // the same event again
                            payment("a-2", "acc-a", 2, 2, 0),       // behind it: goes on
                            payment("result-1", "acc-a", 1, 1, 1),  // and in another partition
                            payment("b-1", "acc-b", 4, 1, 1)});

    const auto& first = at(*batch, 0);
    CHECK(first.outcome() == Outcome::applied);
    CHECK(first.result() == "r:result-1");
    for (std::size_t n : {1, 3}) {
        CAPTURE(n);
        const auto& later = at(*batch, n);
        CHECK(later.is_finished());
        CHECK(later.outcome() == Outcome::duplicate_in_batch);
        CHECK(later.stored() == StoredOutcome::applied);
        CHECK(later.result() == "r:result-1");
    }
    CHECK(at(*batch, 2).outcome() == Outcome::applied);
    CHECK(at(*batch, 4).outcome() == Outcome::applied);
    // One transaction (its set-based start), nothing retried or NACKed.
    CHECK(bench.stats().set_based_transactions == 1);
    CHECK(bench.stats().retries == 0);
    CHECK(bench.stats().conflicts == 0);

    const auto back = exo::hand_back(*batch, bench.stats());
    CHECK(back.requeue.empty());
    CHECK(back.parked.empty());
    CHECK(back.finished.size() == 5);  // both partitions commit past every copy
    CHECK(bench.stats().duplicates_in_batch == 2);
    CHECK(bench.stats().applied == 3);

    CHECK(h.balances() == Balances{{"acc-a", 3}, {"acc-b", 4}});
    CHECK(ledger_rows(h, "result-1") == 1);
    CHECK(processed(h).at("result-1") == "APPLIED/r:result-1");
    // The first copy's claim was completed with its result: a copy in a later
    // batch is Redis's duplicate, as before.
    auto again = bench.run({payment("result-1", "acc-a", 1, 1, 1)});
    CHECK(at(*again, 0).outcome() == Outcome::duplicate_redis);
    CHECK(at(*again, 0).result() == "r:result-1");
}

TEST_CASE(
    "when the first copy of a key fails an attempt, its later copies in the batch are requeued "
    "and never finished before it, and the key ends applied once, the copies duplicates") {
    PipelineHarness h({.name = "inbatchflaky", .partitions = 2, .handler = "cue_batch_ledger"});
    ProtocolBench bench(h);
    // flaky-1 is named failed on its attempts 1 and 2 and applies on its third.
    auto batch =
        bench.run({payment("flaky-1", "acc-f", 1, 1, 0), payment("flaky-1", "acc-f", 1, 1, 0),
                   payment("c-1", "acc-c", 4, 1, 0), payment("flaky-1", "acc-f", 1, 1, 1),
                   payment("d-1", "acc-d", 8, 1, 1)});
    // The record behind the later copy did not wait for it; the one behind the
    // failed first copy in its partition waits, as always.
    CHECK(ledger_rows(h, "d-1") == 1);
    CHECK(ledger_rows(h, "c-1") == 0);
    int batches = 1;
    while (true) {
        const bool first_finished = at(*batch, 0).is_finished();
        for (auto& record : *batch)
            if (record.key == "flaky-1" && &record != &at(*batch, 0)) {
                // Never ahead of the first copy: finished only with it.
                CHECK((record.is_finished()) == first_finished);
                if (!first_finished)
                    CHECK(std::holds_alternative<exo::fate::Requeue>(record.fate()));
            }
        if (!first_finished) CHECK(ledger_rows(h, "flaky-1") == 0);
        auto back = exo::hand_back(*batch, bench.stats());
        if (back.requeue.empty()) break;
        REQUIRE(++batches <= 3);
        batch = bench.rerun(std::move(back.requeue));
    }
    CHECK(batches == 3);
    CHECK(bench.stats().applied == 3);
    CHECK(bench.stats().duplicates_in_batch == 2);
    CHECK(ledger_rows(h, "flaky-1") == 1);
    CHECK(h.balances() == Balances{{"acc-c", 4}, {"acc-d", 8}, {"acc-f", 1}});
    CHECK(processed(h).at("flaky-1") == "APPLIED");
}

TEST_CASE(
    "when the first copy of a key is NACKed because another worker holds its claim, its later "
    "copies are requeued with it, and once the claim is free the key applies once") {
    PipelineHarness h({.name = "inbatchnack", .partitions = 2});
    AnotherWorker other(h, "n-1");
    ProtocolBench bench(h);
    auto batch = bench.run({payment("n-1", "acc-n", 1, 1, 0), payment("n-1", "acc-n", 1, 1, 1),
                            payment("e-1", "acc-e", 2, 1, 1)});
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, 0).fate()));
    CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, 1).fate()));
    CHECK(at(*batch, 2).outcome() == Outcome::applied);
    CHECK(bench.stats().conflicts == 1);  // the first copy's NACK only
    auto back = exo::hand_back(*batch, bench.stats());
    CHECK(back.requeue.size() == 2);
    CHECK(back.finished.size() == 1);

    other.release();
    batch = bench.rerun(std::move(back.requeue));
    CHECK(at(*batch, 0).outcome() == Outcome::applied);
    CHECK(at(*batch, 1).outcome() == Outcome::duplicate_in_batch);
    CHECK(ledger_rows(h, "n-1") == 1);
    CHECK(h.balances() == Balances{{"acc-e", 2}, {"acc-n", 1}});
}

TEST_CASE(
    "a later copy of a key whose first copy is dead-lettered in its batch is a duplicate of the "
    "dead-lettered key, and only one dead letter is produced") {
    PipelineHarness h({.name = "inbatchpoison", .partitions = 2, .handler = "misbehaving_ledger"});
    ProtocolBench bench(h);
    auto batch =
        bench.run({payment("poison-1", "acc-p", 1, 1, 0), payment("poison-1", "acc-p", 1, 1, 1),
                   payment("g-1", "acc-g", 2, 1, 1)});
    CHECK(at(*batch, 0).outcome() == Outcome::dead_lettered);
    const auto& later = at(*batch, 1);
    CHECK(later.outcome() == Outcome::duplicate_in_batch);
    CHECK(later.stored() == StoredOutcome::dead_lettered);
    CHECK(later.result() == "poison record refused");
    CHECK(exo::hand_back(*batch, bench.stats()).finished.size() == 3);
    CHECK(processed(h).at("poison-1") == "DEAD_LETTERED/poison record refused");
    CHECK(exo::testing::partition_end(h.bootstrap(), h.topic() + ".dlq") == 1);
    // What a copy in the next batch finds, as before: the same answer.
    auto again = bench.run({payment("poison-1", "acc-p", 1, 1, 1)});
    CHECK(at(*again, 0).outcome() == Outcome::duplicate_redis);
    CHECK(at(*again, 0).stored() == later.stored());
    CHECK(at(*again, 0).result() == later.result());
}

TEST_CASE(
    "the daemon settles a key repeated in one poll within one batch and one transaction, and "
    "commits every offset") {
    PipelineHarness h({.name = "inbatchdaemon", .partitions = 2, .concurrency = 1});
    // Long enough for everything produced before the start to make one batch.
    h.mutable_config().pipeline.linger = 1000ms;
    h.produce({payment("k-1", "acc-k", 1, 1, 0), payment("k-1", "acc-k", 1, 1, 0),
               payment("k-2", "acc-k", 2, 2, 0), payment("k-1", "acc-k", 1, 1, 1),
               payment("m-1", "acc-m", 4, 1, 1)});
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(60s));  // offsets committed past every copy
    daemon.stop();
    const auto& s = daemon.stats();
    CHECK(s.applied == 3);
    CHECK(s.duplicates_in_batch == 2);
    CHECK(s.duplicates_redis + s.duplicates_postgres == 0);
    CHECK(s.batches == 1);
    CHECK(s.set_based_transactions == 1);
    CHECK(h.balances() == Balances{{"acc-k", 3}, {"acc-m", 4}});
    CHECK(ledger_rows(h, "k-1") == 1);
}

TEST_CASE(
    "the records held behind a CONFLICT give their claims back before the transaction, so "
    "another worker's copies of their keys apply meanwhile instead of being NACKed, and only the "
    "first is counted as a NACK") {
    PipelineHarness h({.name = "heldbehind",
                       .partitions = 2,
                       .handler = "misbehaving_ledger",
                       .slow_for = 5000ms});
    AnotherWorker other(h, "h-1");
    AnotherWorker also(h, "h-3");
    // This worker: h-1 is NACKed, h-3 and h-2 behind it wait with it; slow-1 in
    // the other partition keeps the batch's transaction open for 5 s.
    ProtocolBench bench(h);
    std::unique_ptr<exo::Batch> batch;
    std::thread running([&] {
        batch = bench.run({payment("h-1", "acc-h", 1, 1, 0), payment("h-3", "acc-y", 3, 1, 0),
                           payment("h-2", "acc-x", 2, 1, 0), payment("slow-1", "acc-s", 4, 1, 1)});
    });
    const bool claim_step_done =
        exo::testing::eventually([&] { return other.claimed("slow-1"); }, 30000ms);
    const bool h2_given_back =
        exo::testing::eventually([&] { return !other.claimed("h-2"); }, 30000ms);
    // Given back while slow-1's transaction is still open, not by its settle().
    const auto slow_rows = ledger_rows(h, "slow-1");
    // Another worker's copy of h-2, from another partition, meanwhile.
    ProtocolBench second(h);
    auto copy = second.run({payment("h-2", "acc-x", 2, 1, 1)});
    running.join();
    REQUIRE(claim_step_done);
    REQUIRE(h2_given_back);
    CHECK(slow_rows == 0);
    CHECK(at(*copy, 0).outcome() == Outcome::applied);
    CHECK(second.stats().conflicts == 0);

    for (std::size_t n : {0, 1, 2})
        CHECK(std::holds_alternative<exo::fate::Requeue>(at(*batch, n).fate()));
    CHECK_FALSE(at(*batch, 2).token);
    CHECK(at(*batch, 3).outcome() == Outcome::applied);
    // h-3's own CONFLICT changed nothing: it already waited behind h-1.
    CHECK(bench.stats().conflicts == 1);
    CHECK(at(*batch, 0).pending.nacks == 1);
    CHECK(at(*batch, 1).pending.nacks == 0);
    auto back = exo::hand_back(*batch, bench.stats());
    other.release();
    also.release();
    batch = bench.rerun(std::move(back.requeue));
    CHECK(at(*batch, 0).outcome() == Outcome::applied);
    CHECK(at(*batch, 1).outcome() == Outcome::applied);
    CHECK(at(*batch, 2).outcome() == Outcome::duplicate_redis);  // the other worker applied it
    CHECK(ledger_rows(h, "h-2") == 1);
    CHECK(h.balances() == Balances{{"acc-h", 1}, {"acc-s", 4}, {"acc-x", 2}, {"acc-y", 3}});
}

TEST_CASE(
    "keys repeated across partitions under strict sequences, two batch runners and batches of 1000 "
    "finish in a few dozen batches, not a storm of NACKs and parks") {
    PipelineHarness h({.name = "storm", .partitions = 4, .batch_size = 1000});
    // A fifth of the records repeat an earlier event, half of those in another
    // partition, at its end (payments_workload.hpp).
    const auto workload = exo::generate_payments(
        {.count = 3000, .accounts = 50, .duplicate_ratio = 0.2, .partitions = 4, .seed = 9});
    REQUIRE(workload.duplicates > 500);
    h.produce(workload);
    RunningDaemon daemon(h.config(), h.registry(), h.bootstrap());
    REQUIRE(h.wait_until_consumed(120s));
    daemon.stop();
    h.check_exactly_once(workload);
    const auto& s = daemon.stats();
    CAPTURE(s.summary());
    // Measured: 390 to 1,007 batches (most under 20 records, re-parking the
    // records of one entity one by one) before gap parks lost their jitter, the
    // records held behind a CONFLICT gave their claims back and only the NACKed
    // record counted; 15 to 25 batches and 5 to 13 NACKs after.
    CHECK(s.batches <= workload.messages.size() / 25);
    CHECK(s.conflicts <= workload.messages.size() / 50);
}
