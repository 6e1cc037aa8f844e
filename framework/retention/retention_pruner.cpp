#include "retention/retention_pruner.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <functional>
#include <pqxx/pqxx>
#include <random>

#include "core/backoff.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/retention_statements.hpp"
#include "pg/session.hpp"
#include "retention/prune_throttle.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;
using Table = RetentionStats::Table;

// A counter drawn from within the last hour is kept even with
// outbox.retention_days 0, where the relay deletes rows as it publishes them:
// deleting the counter of a busy key after each publication would only make
// its next emit insert it again.
constexpr std::chrono::hours kKeyIdleFloor{1};
// Counters become idle no sooner than kKeyIdleFloor, so sweeping them (every
// counter read, whether it goes or not) more often than that finds little.
constexpr std::chrono::hours kKeySweepEvery{1};
// How often the lag gauges are read while a backlog is being deleted.
constexpr std::chrono::seconds kLagEvery{5};

struct Chunk {
    std::size_t deleted = 0;
    bool more = false;     // the table may have more to delete now
    std::size_t work = 0;  // rows the chunk went through, for the pace
};

struct Target {
    Table table;
    std::function<Chunk(pqxx::transaction_base&)> prune;
    bool done = false;
};

}  // namespace

RetentionPruner::RetentionPruner(const RetentionConfig& retention, const PostgresConfig& postgres,
                                 std::chrono::hours outbox_retention, std::string group,
                                 PipelineStats& stats)
    : retention_(retention),
      postgres_(postgres),
      outbox_retention_(outbox_retention),
      group_(std::move(group)),
      stats_(stats) {}

RetentionPruner::~RetentionPruner() {
    stop();
}

void RetentionPruner::start() {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void RetentionPruner::stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
}

void RetentionPruner::run(std::stop_token stop) {
    const Backoff backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(10000)};
    std::mt19937 jitter(std::random_device{}());
    std::unique_ptr<pqxx::connection> connection;
    int failures = 0;
    while (!stop.stop_requested()) {
        auto wait = retention_.interval;
        try {
            if (!connection) connection = open_postgres_session(postgres_);
            prune_until_caught_up(*connection, stop);
            if (failures > 0) spdlog::info("retention: pruning again");
            failures = 0;
        } catch (const std::exception& e) {
            ++failures;
            stats_.retention.failures++;
            wait = std::min(
                wait, backoff.delay(failures, std::uniform_real_distribution<>(0, 1)(jitter)));
            spdlog::warn(
                "retention: pruning failed ({} in a row), retrying in {} ms; expired rows stay "
                "until then: {}",
                failures, wait.count(), e.what());
            connection.reset();  // a new session next time: this one may be broken
        }
        sleep_until(Clock::now() + wait, stop);
    }
}

std::size_t RetentionPruner::prune_until_caught_up(pqxx::connection& connection,
                                                   const std::stop_token& stop) {
    const auto& group = group_;
    const auto dedup = postgres_.dedup_retention;
    const auto outbox = outbox_retention_;
    const int limit = retention_.chunk_rows;
    KeySweep sweep;  // from the first counter, once per pass
    std::array<Target, RetentionStats::kCount> targets{{
        {Table::processed,
         [&](pqxx::transaction_base& tx) {
             const auto n = prune_processed(tx, group, dedup, limit);
             return Chunk{n, n == static_cast<std::size_t>(limit), n};
         }},
        {Table::sequence_gaps,
         [&](pqxx::transaction_base& tx) {
             const auto n = prune_gaps(tx, group, dedup, limit);
             return Chunk{n, n == static_cast<std::size_t>(limit), n};
         }},
        {Table::outbox,
         [&](pqxx::transaction_base& tx) {
             const auto n = prune_outbox(tx, group, outbox, limit);
             return Chunk{n, n == static_cast<std::size_t>(limit), n};
         }},
        {Table::outbox_keys,
         [&](pqxx::transaction_base& tx) {
             sweep = prune_outbox_keys(tx, group, sweep, std::max(outbox, kKeyIdleFloor), limit);
             return Chunk{sweep.deleted, sweep.scanned == static_cast<std::size_t>(limit),
                          sweep.scanned};
         }},
        {Table::replays,
         [&](pqxx::transaction_base& tx) {
             const auto n = prune_replays(tx, group, dedup, limit);
             return Chunk{n, n == static_cast<std::size_t>(limit), n};
         }},
        {Table::dead_letters,
         [&](pqxx::transaction_base& tx) {
             const auto n = prune_dead_letters(tx, group, dedup, limit);
             return Chunk{n, n == static_cast<std::size_t>(limit), n};
         }},
    }};

    const bool sweep_keys = Clock::now() >= next_key_sweep_;
    targets[Table::outbox_keys].done = !sweep_keys;
    const PruneThrottle throttle(retention_.max_rows_per_second);
    std::array<std::size_t, RetentionStats::kCount> deleted{};
    update_lag(connection);
    auto next_lag = Clock::now() + kLagEvery;
    bool pending = true;
    // One chunk per table in turn, so a large backlog in one table does not
    // hold back the others.
    while (pending && !stop.stop_requested()) {
        pending = false;
        for (auto& target : targets) {
            if (target.done) continue;
            const auto started = Clock::now();
            ExplicitTransaction transaction(connection);
            const auto chunk = target.prune(transaction.statements());
            transaction.commit();
            stats_.retention.pruned[target.table] += chunk.deleted;
            deleted[target.table] += chunk.deleted;
            target.done = !chunk.more;
            pending = pending || chunk.more;
            if (!sleep_until(throttle.next_start(started, chunk.work), stop)) break;
        }
        if (Clock::now() >= next_lag) {
            update_lag(connection);
            next_lag = Clock::now() + kLagEvery;
        }
    }
    update_lag(connection);
    if (sweep_keys && targets[Table::outbox_keys].done)
        next_key_sweep_ = Clock::now() + kKeySweepEvery;

    std::size_t total = 0;
    std::string counts;
    for (std::size_t t = 0; t < deleted.size(); ++t) {
        total += deleted[t];
        if (deleted[t] == 0) continue;
        counts += (counts.empty() ? "" : ", ") + std::to_string(deleted[t]) + " from " +
                  RetentionStats::kNames[t];
    }
    if (total > 0) spdlog::info("retention: pruned {} expired rows ({})", total, counts);
    return total;
}

void RetentionPruner::update_lag(pqxx::connection& connection) {
    pqxx::nontransaction tx(connection);
    const auto lag = retention_lag(tx, group_, postgres_.dedup_retention, outbox_retention_);
    stats_.retention.lag_ms[Table::processed] = lag.processed.count();
    stats_.retention.lag_ms[Table::sequence_gaps] = lag.gaps.count();
    stats_.retention.lag_ms[Table::outbox] = lag.outbox.count();
    stats_.retention.lag_ms[Table::replays] = lag.replays.count();
    stats_.retention.lag_ms[Table::dead_letters] = lag.dead_letters.count();
}

bool RetentionPruner::sleep_until(Clock::time_point until, const std::stop_token& stop) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_until(lock, stop, until, [] { return false; }) && !stop.stop_requested();
}

}  // namespace exo
