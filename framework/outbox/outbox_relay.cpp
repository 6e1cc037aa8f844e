#include "outbox/outbox_relay.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <map>
#include <pqxx/pqxx>
#include <random>
#include <set>
#include <system_error>

#include <exo/outbox.hpp>
#include "core/backoff.hpp"
#include "core/text.hpp"
#include "outbox/backlog_pacing.hpp"
#include "outbox/outbox_rows.hpp"
#include "outbox/outbox_writer.hpp"
#include "pg/explicit_transaction.hpp"
#include "pg/session.hpp"

namespace exo {

ProducerOptions relay_producer(ProducerOptions base, const EmitLimits& limits) {
    auto options = std::move(base);
    const auto smallest = limits.smallest_topic_bytes();
    if (!smallest || *smallest <= kRecordBatchOverhead) return options;
    std::size_t batch = 1000000;
    if (auto it = options.properties.find("batch.size"); it != options.properties.end()) {
        const auto& text = it->second;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), batch);
        if (error != std::errc() || end != text.data() + text.size()) return options;
    }
    options.properties["batch.size"] =
        std::to_string(std::min(batch, *smallest - kRecordBatchOverhead));
    return options;
}
namespace {

// The producer's message.timeout.ms is 8 s (the dead-letter producer's): by
// then every record has its report, and the flush gives up after 10 s.
constexpr std::chrono::milliseconds kFlushTimeout{10000};
constexpr rd_kafka_resp_err_t kNoReport = RD_KAFKA_RESP_ERR__IN_PROGRESS;
// A unit whose head failed retries after 500 ms, doubling per failure in a
// row up to this: a refused row costs a log line every half minute.
constexpr std::chrono::milliseconds kMaxUnitBackoff{30000};
// Keys logged one by one per round: with Kafka down every key of a round
// fails, and thousands of lines would hide the one that names the cause.
constexpr std::size_t kKeysLoggedPerRound = 10;

// Registers LISTEN on construction; a notification only needs to wake the loop.
class Listener final : public pqxx::notification_receiver {
public:
    explicit Listener(pqxx::connection_base& c) : notification_receiver(c, kOutboxChannel) {}
    void operator()(const std::string&, int) override {}
};

}  // namespace

OutboxRelay::OutboxRelay(const OutboxConfig& outbox, const PostgresConfig& postgres,
                         std::string group, PipelineStats& stats, Failpoints& failpoints,
                         ProducerOptions producer)
    : outbox_(outbox),
      postgres_(postgres),
      group_(std::move(group)),
      stats_(stats),
      failpoints_(failpoints) {
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
        std::chrono::milliseconds wait = outbox_.poll_interval;
        try {
            if (!connection) {
                connection = open_postgres_session(postgres_);
                listener = std::make_unique<Listener>(*connection);
            }
            update_backlog_when_due(*connection);
            // Rings from here on wake the next wait: their rows may have
            // committed after this round's snapshot.
            doorbell_.clear();
            const auto claimed = relay_once(*connection);
            if (failures > 0) spdlog::info("outbox relay: publishing again");
            failures = 0;
            // Rows were there: more may be (the bounds cut the round). An empty
            // claim (nothing pending, all parked or held by another relay) waits.
            if (claimed > 0) continue;
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
    const std::string& group = group_;
    ExplicitTransaction batch(connection);
    auto claim = claim_outbox_rows(batch.statements(), group,
                                   {outbox_.batch_size, outbox_.max_round_bytes}, cursor_);
    auto& rows = claim.rows;
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
    // A row produce() refuses (too large, a topic librdkafka knows is missing)
    // fails its unit alone: the unit's later rows of the round are not
    // produced (they would overtake it), every other unit's are.
    std::vector<std::string> refused(rows.size());  // produce()'s error, per row
    std::set<OutboxUnit> stopped;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto& row = rows[i];
        OutboxUnit unit{row.topic, row.ordering_key};
        if (stopped.contains(unit)) continue;
        auto headers = std::move(row.headers);
        headers.push_back({std::string(kOutboxIdHeader), row.message_id});
        try {
            producer_->produce({row.topic, std::nullopt, row.key, row.value, std::move(headers)},
                               kFlushTimeout, (round << 32) | i);
        } catch (const KafkaError& e) {
            refused[i] = e.what();
            stopped.insert(std::move(unit));
        }
    }
    std::string flush_failure;
    try {
        producer_->flush(kFlushTimeout);
    } catch (const KafkaError& e) {
        flush_failure = e.what();
        producer_->purge();  // nothing given up on may arrive later, beside the retry
    }
    // Per unit: the acknowledged prefix only, so a unit's later row is never
    // marked while an earlier one waits (it is re-published after it). The
    // first row refused or without an acknowledgement fails its unit.
    std::vector<std::int64_t> sent;
    std::map<OutboxUnit, OutboxUnitFailure> failed;
    {
        std::lock_guard lock(reports_mutex_);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            OutboxUnit unit{rows[i].topic, rows[i].ordering_key};
            if (failed.contains(unit)) continue;
            if (refused[i].empty() && reports_[i] == RD_KAFKA_RESP_ERR_NO_ERROR) {
                sent.push_back(rows[i].id);
                continue;
            }
            std::string reason = !refused[i].empty() ? refused[i]
                                 : reports_[i] == kNoReport
                                     ? "no acknowledgement within the flush (" + flush_failure + ")"
                                     : rd_kafka_err2name(reports_[i]) + std::string(": ") +
                                           rd_kafka_err2str(reports_[i]);
            failed.emplace(unit, OutboxUnitFailure{unit, rows[i].id, std::move(reason)});
        }
        reports_.clear();
    }
    failpoints_.hit("outbox_after_ack");
    mark_outbox_sent(batch.statements(), group, sent, outbox_.retention.count() > 0);
    std::vector<OutboxUnitFailure> failures;
    failures.reserve(failed.size());
    for (auto& [unit, failure] : failed) failures.push_back(std::move(failure));
    const auto parked = park_outbox_units(batch.statements(), group, failures, kMaxUnitBackoff);
    std::vector<OutboxUnit> recovered;
    for (const auto& [unit, earlier_failures] : claim.units)
        if (earlier_failures > 0 && !failed.contains(unit)) recovered.push_back(unit);
    unpark_outbox_units(batch.statements(), group, recovered);
    batch.commit();
    stats_.outbox_published += sent.size();
    if (!failures.empty()) {
        stats_.outbox_failures++;
        stats_.outbox_unit_failures += failures.size();
    }
    log_failures(rows, failures, parked);
    for (std::size_t i = 0; i < recovered.size() && i < kKeysLoggedPerRound; ++i)
        spdlog::info("outbox relay: topic {} key {} publishes again", recovered[i].topic,
                     // A key's unit is its sha256 (64 hex digits); a keyless one the
                     // emitting session's pid, or '' (rows of exo 0.2.0 and before).
                     recovered[i].ordering_key.size() == 64 ? "sha256:" + recovered[i].ordering_key
                                                            : "(none)");
    if (recovered.size() > kKeysLoggedPerRound)
        spdlog::info("outbox relay: {} more keys publish again",
                     recovered.size() - kKeysLoggedPerRound);
    return rows.size();
}

void OutboxRelay::log_failures(const std::vector<OutboxRow>& rows,
                               const std::vector<OutboxUnitFailure>& failures,
                               const std::vector<ParkedUnit>& parked) const {
    std::map<std::int64_t, const OutboxRow*> by_id;
    for (const auto& row : rows) by_id.emplace(row.id, &row);
    std::map<OutboxUnit, const ParkedUnit*> park;
    for (const auto& p : parked) park.emplace(p.unit, &p);
    for (std::size_t i = 0; i < failures.size() && i < kKeysLoggedPerRound; ++i) {
        const auto& f = failures[i];
        const auto& row = *by_id.at(f.row_id);
        const auto* p = park.contains(f.unit) ? park.at(f.unit) : nullptr;
        spdlog::warn(
            "outbox relay: row {} (topic {}, key {}, exo-outbox-id {}) was not published: {}; "
            "its key waits {} ms before the next attempt ({} failure(s) in a row) and its "
            "later rows wait behind it; other keys go on (exo outbox list shows it)",
            row.id, row.topic, row.key ? printable_text(*row.key, 200) : "(none)", row.message_id,
            f.reason, p ? p->retry_in.count() : 0, p ? p->failures : 0);
    }
    if (failures.size() > kKeysLoggedPerRound)
        spdlog::warn(
            "outbox relay: {} more keys were not published in this round and wait with backoff "
            "(exo_outbox_parked_units, exo outbox list)",
            failures.size() - kKeysLoggedPerRound);
}

void OutboxRelay::await_wake(pqxx::connection& connection, std::chrono::milliseconds timeout,
                             const std::stop_token& stop) {
    if (connection.get_notifs() > 0) return;  // a NOTIFY read with the last round's results
    const std::stop_callback on_stop(stop, [this] { doorbell_.ring(); });
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!stop.stop_requested()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return;
        std::array<pollfd, 2> fds{pollfd{connection.sock(), POLLIN, 0},
                                  pollfd{doorbell_.fd(), POLLIN, 0}};
        if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "outbox relay: poll()");
        }
        if (fds[1].revents != 0) return;  // rung: a commit of this process emitted (or a stop)
        // Readable: a NOTIFY, or the server closing the session (get_notifs throws then).
        if (fds[0].revents != 0 && connection.get_notifs() > 0) return;
    }
}

void OutboxRelay::update_backlog_when_due(pqxx::connection& connection) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_backlog_) return;
    pqxx::nontransaction tx(connection);
    const auto backlog = outbox_backlog(tx, group_);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - now);
    next_backlog_ = now + next_backlog_reading(took);
    stats_.outbox_pending = backlog.pending;
    stats_.outbox_oldest_pending_ms = backlog.oldest.count();
    stats_.outbox_parked_units = backlog.parked_units;
}

}  // namespace exo
