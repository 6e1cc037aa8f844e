#include "pipeline/retention_pruner.hpp"

#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

#include "pg/batch_transaction.hpp"
#include "pg/framework_statements.hpp"
#include "pg/session.hpp"

namespace exo {
namespace {

constexpr int kChunkRows = 1000;
constexpr int kMaxChunksPerTable = 100;  // the rest waits for the next pass

}  // namespace

RetentionPruner::RetentionPruner(const PostgresConfig& config, PipelineStats& stats,
                                 std::chrono::milliseconds interval)
    : config_(config), stats_(stats), interval_(interval) {}

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
    while (!stop.stop_requested()) {
        auto next = interval_;
        try {
            if (auto deleted = prune_once(); deleted > 0)
                spdlog::info("pruned {} dedup rows and gap sightings older than the retention",
                             deleted);
        } catch (const std::exception& e) {
            next = std::min<std::chrono::milliseconds>(interval_, std::chrono::minutes(1));
            spdlog::warn("pruning dedup rows failed, retrying in {} s: {}",
                         std::chrono::duration_cast<std::chrono::seconds>(next).count(), e.what());
        }
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, stop, next, [] { return false; });
    }
}

std::size_t RetentionPruner::prune_once() {
    auto connection = open_postgres_session(config_);
    std::size_t total = 0;
    for (auto* prune : {&prune_processed, &prune_gaps}) {
        for (int chunk = 0; chunk < kMaxChunksPerTable; ++chunk) {
            BatchTransaction batch(*connection);
            const auto deleted = (*prune)(batch.statements(), config_.dedup_retention, kChunkRows);
            batch.commit();
            total += deleted;
            stats_.dedup_rows_pruned += deleted;
            if (deleted < static_cast<std::size_t>(kChunkRows)) break;
        }
    }
    return total;
}

}  // namespace exo
