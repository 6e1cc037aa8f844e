#include "outbox/outbox_relay.hpp"

#include <spdlog/spdlog.h>

#include <pqxx/pqxx>
#include <random>
#include <set>

#include <exo/outbox.hpp>
#include "core/backoff.hpp"
#include "outbox/outbox_rows.hpp"
#include "outbox/outbox_writer.hpp"
#include "pg/batch_transaction.hpp"
#include "pg/session.hpp"

namespace exo {
namespace {

// The producer's message.timeout.ms is 8 s (the dead-letter producer's): by
// then every record has its report, and the flush gives up after 10 s.
constexpr std::chrono::milliseconds kFlushTimeout{10000};
constexpr rd_kafka_resp_err_t kNoReport = RD_KAFKA_RESP_ERR__IN_PROGRESS;

// Registers LISTEN on construction; a notification only needs to wake the loop.
class Listener final : public pqxx::notification_receiver {
public:
    explicit Listener(pqxx::connection_base& c) : notification_receiver(c, kOutboxChannel) {}
    void operator()(const std::string&, int) override {}
};

}  // namespace

OutboxRelay::OutboxRelay(const Config& config, PipelineStats& stats, Failpoints& failpoints,
                         ProducerOptions producer)
    : config_(config), stats_(stats), failpoints_(failpoints) {
    // A tag is (round << 32) | row: a report that arrives after its round gave up
    // on it (a purged record, served late) cannot count for the next round's row.
    producer.on_delivery = [this](std::uint64_t tag, rd_kafka_resp_err_t error) {
        std::lock_guard lock(reports_mutex_);
        const auto row = tag & 0xFFFFFFFFu;
        if ((tag >> 32) == round_ && row < reports_.size()) reports_[row] = error;
    };
    producer_ = std::make_unique<KafkaProducer>(producer);
}

OutboxRelay::~OutboxRelay() {
    stop();
}

void OutboxRelay::start() {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void OutboxRelay::stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
}

void OutboxRelay::run(std::stop_token stop) {
    const Backoff backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(10000)};
    std::mt19937 jitter(std::random_device{}());
    std::unique_ptr<pqxx::connection> connection;
    std::unique_ptr<Listener> listener;
    int failures = 0;
    while (!stop.stop_requested()) {
        std::chrono::milliseconds wait = config_.outbox.poll_interval;
        try {
            if (!connection) {
                connection = open_postgres_session(config_.postgres);
                listener = std::make_unique<Listener>(*connection);
            }
            // Before the round too, so the gauges stay current while rounds fail.
            update_backlog(*connection);
            const auto claimed = relay_once(*connection);
            if (claimed > 0) update_backlog(*connection);
            if (failures > 0) spdlog::info("outbox relay: publishing again");
            failures = 0;
            if (claimed >= static_cast<std::size_t>(config_.outbox.batch_size)) continue;
            await_wake(*connection, wait, stop);
            continue;
        } catch (const std::exception& e) {
            ++failures;
            stats_.outbox_failures++;
            wait = backoff.delay(failures, std::uniform_real_distribution<>(0, 1)(jitter));
            spdlog::warn(
                "outbox relay: a round failed ({} in a row), retrying in {} ms; emitted records "
                "wait in exo_outbox: {}",
                failures, wait.count(), e.what());
            // A new session next time: this one may be broken or mid-transaction.
            listener.reset();
            connection.reset();
        }
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, stop, wait, [] { return false; });
    }
}

std::size_t OutboxRelay::relay_once(pqxx::connection& connection) {
    BatchTransaction batch(connection);
    auto rows = claim_outbox_rows(batch.statements(), config_.outbox.batch_size);
    if (rows.empty()) {
        batch.commit();
        return 0;
    }
    std::uint64_t round = 0;
    {
        std::lock_guard lock(reports_mutex_);
        reports_.assign(rows.size(), kNoReport);
        round = ++round_ & 0xFFFFFFFFu;
        round_ = round;
    }
    std::string failure;
    try {
        for (std::size_t i = 0; i < rows.size(); ++i) {
            auto& row = rows[i];
            auto headers = std::move(row.headers);
            headers.push_back({std::string(kOutboxIdHeader), row.message_id});
            producer_->produce({row.topic, std::nullopt, row.key, row.value, std::move(headers)},
                               kFlushTimeout, (round << 32) | i);
        }
        producer_->flush(kFlushTimeout);
    } catch (const KafkaError& e) {
        failure = e.what();
        producer_->purge();  // nothing given up on may arrive later, beside the retry
    }
    // Per (topic, key): the acknowledged prefix only, so a unit's later row is
    // never marked while an earlier one waits (it is re-published after it).
    std::vector<std::int64_t> sent;
    std::set<std::pair<std::string, std::string>> held_back;
    {
        std::lock_guard lock(reports_mutex_);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            std::pair unit{rows[i].topic, rows[i].ordering_key};
            if (held_back.count(unit) != 0) continue;
            if (reports_[i] == RD_KAFKA_RESP_ERR_NO_ERROR)
                sent.push_back(rows[i].id);
            else
                held_back.insert(std::move(unit));
        }
        reports_.clear();
    }
    failpoints_.hit("outbox_after_ack");
    mark_outbox_sent(batch.statements(), sent, config_.outbox.retention.count() > 0);
    batch.commit();
    stats_.outbox_published += sent.size();
    if (sent.size() < rows.size())
        throw KafkaError(RD_KAFKA_RESP_ERR__FAIL,
                         "publishing outbox rows: " + std::to_string(rows.size() - sent.size()) +
                             " of " + std::to_string(rows.size()) +
                             " were not acknowledged and stay pending" +
                             (failure.empty() ? std::string() : " (" + failure + ")"),
                         true);
    return rows.size();
}

void OutboxRelay::await_wake(pqxx::connection& connection, std::chrono::milliseconds timeout,
                             const std::stop_token& stop) {
    // In slices, so a stop is noticed within a quarter of a second.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!stop.stop_requested()) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return;
        const auto slice =
            std::min<std::chrono::microseconds>(left, std::chrono::milliseconds(250));
        if (connection.await_notification(0, static_cast<long>(slice.count())) > 0) return;
    }
}

void OutboxRelay::update_backlog(pqxx::connection& connection) {
    pqxx::nontransaction tx(connection);
    const auto backlog = outbox_backlog(tx);
    stats_.outbox_pending = backlog.pending;
    stats_.outbox_oldest_pending_ms = backlog.oldest.count();
}

}  // namespace exo
