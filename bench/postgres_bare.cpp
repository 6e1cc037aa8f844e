#include "postgres_bare.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <latch>
#include <memory>
#include <pqxx/pqxx>
#include <thread>

#include "api/context_access.hpp"
#include "bench_ledger.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "core/record_fingerprint.hpp"
#include "ledger.hpp"
#include "pg/framework_statements.hpp"
#include "pg_round_trips.hpp"
#include "runtime/sessions/record_connection.hpp"
#include "set_based_prototype.hpp"

namespace exo::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The same strings as runtime/worker.cpp: one round trip per record.
constexpr const char* kFirstSavepoint = "SAVEPOINT exo_record";
constexpr const char* kNextSavepoint = "RELEASE SAVEPOINT exo_record; SAVEPOINT exo_record";

// One connection's share, records `indexes` of `w` in order, as a worker would
// run them with exo's per-record statements.
void run_per_record(pqxx::connection& conn, const Isolation& iso, const TopicWorkload& w,
                    const std::vector<std::size_t>& indexes, const BareOptions& o, int thread,
                    handlers::LedgerRecordHandler& handler, ShareOutcome& out) {
    const KeySource key_source = ledger_key_source();
    const SequenceConfig sequence = ledger_sequence_config();
    auto& log = *spdlog::default_logger();
    const Topic topic{w.topic};
    const bool savepoints = o.mode == BareMode::per_record_savepoint;
    const std::string handler_name = "ledger";
    for (std::size_t begin = 0; begin < indexes.size();
         begin += static_cast<std::size_t>(o.batch_size)) {
        auto end = std::min(indexes.size(), begin + static_cast<std::size_t>(o.batch_size));
        pqxx::work tx(conn);
        for (std::size_t n = begin; n < end; ++n) {
            auto i = indexes[n];
            Record record{topic,
                          Partition{thread},
                          Offset{static_cast<std::int64_t>(i)},
                          w.workload.messages[i].payment.account_id,
                          w.payloads[i],
                          {},
                          -1};
            JsonPayload payload(record.value);
            auto key = derive_idempotency_key(key_source, record, payload);
            if (savepoints) {
                tx.exec(n == begin ? kFirstSavepoint : kNextSavepoint);
                out.round_trips++;
            }
            ProcessedRow row{iso.group,
                             key,
                             FencingToken{1},
                             record.topic_partition(),
                             record.offset,
                             StoredOutcome::applied,
                             {},
                             record_fingerprint(key_source, record.value)};
            // As Worker::run_one: the dedup row and the sequence step in one statement.
            auto seq = extract_sequence(sequence, payload);
            std::optional<SequenceStep> step;
            step.emplace(SequenceStep{handler_name, seq.entity, seq.sequence, sequence.mode});
            out.round_trips++;
            auto start = start_record(tx, row, step);
            if (start.duplicate) {
                out.round_trips++;  // the SELECT of the existing row
                out.duplicates++;
                continue;
            }
            if (!start.verdict || *start.verdict == SequenceVerdict::gap)
                throw std::runtime_error("sequence of " + seq.entity +
                                         " out of order: " + std::to_string(seq.sequence));
            if (*start.verdict == SequenceVerdict::stale) {
                update_processed(tx, row.consumer_group, key, StoredOutcome::stale, "");
                out.round_trips++;
                out.stale++;
                continue;
            }
            auto ctx = detail::ContextAccess::record(tx, record, key, payload, log, 1, false,
                                                     nullptr, nullptr);
            handler.handle(ctx);
            out.round_trips++;
            out.applied++;
        }
        tx.commit();
        out.round_trips += 2;  // BEGIN and COMMIT
    }
}

// A thread: connect and prepare, wait for the start, run its share, then wait
// (alive, so its CPU time can still be read) until released.
void run_thread(const Isolation& iso, const TopicWorkload& w,
                const std::vector<std::size_t>& indexes, const BareOptions& o, int thread,
                std::latch& ready, std::latch& go, std::latch& done, std::latch& release,
                ShareOutcome& out) {
    std::unique_ptr<pqxx::connection> conn;
    handlers::LedgerRecordHandler handler(bench_ledger_options());
    try {
        conn = std::make_unique<pqxx::connection>(iso.uri);
        prepare_record_connection(*conn);
        handler.prepare(*conn);
        prepare_set_based(*conn);
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    ready.count_down();
    go.wait();
    if (out.error.empty()) {
        try {
            if (o.mode == BareMode::per_record || o.mode == BareMode::per_record_savepoint)
                run_per_record(*conn, iso, w, indexes, o, thread, handler, out);
            else
                run_set_based(*conn, iso, w, indexes, o.batch_size, o.mode == BareMode::set_all,
                              thread, handler, out);
        } catch (const std::exception& e) {
            out.error = e.what();
        }
    }
    done.count_down();
    release.wait();
}

}  // namespace

ScenarioResult run_postgres_bare(BenchWorld& world, const Isolation& iso, const TopicWorkload& w,
                                 const BareOptions& o) {
    ScenarioResult r;
    r.name = o.name;
    r.records = w.size();

    std::vector<std::vector<std::size_t>> shares(static_cast<std::size_t>(o.threads));
    for (std::size_t i = 0; i < w.size(); ++i) {
        auto h = std::hash<std::string>{}(w.workload.messages[i].payment.account_id);
        shares[h % shares.size()].push_back(i);
    }
    std::vector<ShareOutcome> outcomes(shares.size());

    begin_memory_window();
    r.memory_before = read_memory();
    auto n = static_cast<std::ptrdiff_t>(shares.size());
    std::latch ready(n), go(1), done(n), release(1);
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < shares.size(); ++t)
        threads.emplace_back([&, t] {
            ::pthread_setname_np(::pthread_self(), "bare-sql");
            run_thread(iso, w, shares[t], o, static_cast<int>(t), ready, go, done, release,
                       outcomes[t]);
        });
    ready.wait();
    std::map<int, std::string> roles{{current_thread_id(), "bench-main"}};
    auto cpu_start = cpu_snapshot(roles, o.servers);
    auto sends_start = postgres_sends();
    auto start = Clock::now();
    go.count_down();
    done.wait();
    auto elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    r.postgres_round_trips = static_cast<double>(postgres_sends() - sends_start);
    r.cpu = cpu_between(cpu_start, cpu_snapshot(roles, o.servers));
    release.count_down();
    for (auto& t : threads) t.join();
    r.seconds_to_finished = r.seconds_to_committed = elapsed;
    r.peak_rss_kb = read_memory().vm_hwm_kb;
    r.rss_at_end_kb = read_memory().vm_rss_kb;

    std::uint64_t round_trips = 0;
    for (const auto& out : outcomes) {
        round_trips += out.round_trips;
        r.stats.applied += out.applied;
        r.stats.duplicates_postgres += out.duplicates;
        r.stats.stale += out.stale;
        if (!out.error.empty() && r.failure.empty()) r.failure = "SQL failed: " + out.error;
    }
    r.postgres_round_trips_reported = static_cast<double>(round_trips);
    r.redis_round_trips = 0;
    if (r.failure.empty()) {
        auto problems = world.check_exactly_once(iso, w.workload);
        if (!problems.empty()) r.failure = "exactly-once check FAILED: " + problems;
    }
    return r;
}

}  // namespace exo::bench
