// exo_prune_bench: how many expired rows per second retention deletes
// (docs/design.md#retention). Fills a schema of its own with expired dedup
// rows (and rows within retention, which must stay), then expired sent outbox
// rows, and times RetentionPruner's pass over each on one session, as the
// daemon's pruner runs: uncapped by default (what PostgreSQL can delete), or
// at --max-rows-per-second (a paced backlog to run beside exo_bench, to see
// what pruning costs the pipeline). Prints rows/s per table per run and the
// median; exit 1 if a pass left an expired row or deleted a kept one.
//
//   exo_prune_bench [--rows N] [--runs N] [--chunk-rows N] [--max-rows-per-second N]
//   (uri: $EXO_POSTGRES_URI; the cap defaults to 0: measure PostgreSQL, not the pace)
//
// Not a test: run it against a PostgreSQL with fsync on, the production setting
// (scripts/services.sh turns it off for tests; ALTER SYSTEM SET fsync = on and
// full_page_writes = on, then restart, to measure).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <pqxx/pqxx>
#include <stop_token>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "pg/migrations.hpp"
#include "retention/retention_pruner.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string uri;
    long rows = 300000;
    int runs = 3;
    int chunk_rows = exo::RetentionConfig{}.chunk_rows;
    int max_rows_per_second = 0;  // uncapped: what PostgreSQL can delete
};

Options parse(int argc, char** argv) {
    Options o;
    if (const char* uri = std::getenv("EXO_POSTGRES_URI")) o.uri = uri;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--rows")
            o.rows = std::stol(value());
        else if (a == "--runs")
            o.runs = std::stoi(value());
        else if (a == "--chunk-rows")
            o.chunk_rows = std::stoi(value());
        else if (a == "--max-rows-per-second")
            o.max_rows_per_second = std::stoi(value());
        else
            throw std::runtime_error(
                "unknown argument " + a +
                " (--rows N, --runs N, --chunk-rows N, --max-rows-per-second N)");
    }
    if (o.uri.empty()) throw std::runtime_error("set EXO_POSTGRES_URI");
    return o;
}

std::string with_search_path(const std::string& uri, const std::string& schema) {
    return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
           schema;
}

long count(pqxx::connection& c, const std::string& sql) {
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<long>();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One timed pass; returns rows/s.
double timed_pass(exo::RetentionPruner& pruner, pqxx::connection& c, long expected) {
    std::stop_source never;
    const auto start = Clock::now();
    const auto deleted = pruner.prune_until_caught_up(c, never.get_token());
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (static_cast<long>(deleted) != expected)
        throw std::runtime_error("the pass deleted " + std::to_string(deleted) + " rows, not " +
                                 std::to_string(expected));
    return static_cast<double>(deleted) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const auto o = parse(argc, argv);
        pqxx::connection admin(o.uri);
        const auto settings = pqxx::nontransaction(admin).exec(
            "SELECT current_setting('fsync'),"
            " current_setting('synchronous_commit'),"
            " current_setting('full_page_writes')")[0];
        std::printf(
            "exo_prune_bench: %ld expired rows per table, %d runs, chunks of %d rows; "
            "fsync=%s synchronous_commit=%s full_page_writes=%s\n",
            o.rows, o.runs, o.chunk_rows, settings[0].c_str(), settings[1].c_str(),
            settings[2].c_str());
        std::vector<double> processed_rates, outbox_rates;
        for (int run = 1; run <= o.runs; ++run) {
            const std::string schema = "exo_prune_bench_" + std::to_string(run);
            pqxx::nontransaction(admin).exec("DROP SCHEMA IF EXISTS " + schema +
                                             " CASCADE; CREATE SCHEMA " + schema);
            exo::Config config;
            config.kafka.group_id = "bench";
            config.postgres.uri = with_search_path(o.uri, schema);
            config.retention.chunk_rows = o.chunk_rows;
            config.retention.max_rows_per_second = o.max_rows_per_second;
            pqxx::connection c(config.postgres.uri);
            exo::apply_migrations(c);
            const long kept = o.rows / 10;
            pqxx::nontransaction(c).exec(
                "INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
                " kafka_partition, kafka_offset, outcome, processed_at)"
                " SELECT 'bench', 'old-' || i, 1, 'payments', i % 32, i, 'APPLIED',"
                " now() - interval '40 days' + i * interval '1 ms'"
                " FROM generate_series(1, " +
                std::to_string(o.rows) +
                ") i;"
                " INSERT INTO exo_processed (consumer_group, idempotency_key, fencing_token, topic,"
                " kafka_partition, kafka_offset, outcome) SELECT 'bench', 'new-' || i, 1,"
                " 'payments', i % 32, i, 'APPLIED' FROM generate_series(1, " +
                std::to_string(kept) + ") i");
            pqxx::nontransaction(c).exec("VACUUM ANALYZE exo_processed");
            exo::PipelineStats stats;
            exo::RetentionPruner pruner(config.retention, config.postgres, config.outbox.retention,
                                        config.kafka.group_id, stats);
            processed_rates.push_back(timed_pass(pruner, c, o.rows));
            if (count(c, "SELECT count(*) FROM exo_processed") != kept)
                throw std::runtime_error("exo_processed does not hold exactly the kept rows");

            pqxx::nontransaction(c).exec(
                "INSERT INTO exo_outbox (consumer_group, topic, message_key, value, ordering_key,"
                " seq, created_at) SELECT 'bench', 'out', convert_to('k' || (i % 1000), "
                "'UTF8'),"
                " convert_to(repeat('x', 100), 'UTF8'), sha256(convert_to('k' || (i % 1000),"
                " 'UTF8')), i, now() - interval '8 days' + i * interval '1 ms'"
                " FROM generate_series(1, " +
                std::to_string(o.rows) + ") i");
            // Sent: no pending row (each insert gets one, sql/0010_exo_outbox_lean.sql).
            pqxx::nontransaction(c).exec("TRUNCATE exo_outbox_pending");
            pqxx::nontransaction(c).exec("VACUUM ANALYZE exo_outbox");
            outbox_rates.push_back(timed_pass(pruner, c, o.rows));
            if (count(c, "SELECT count(*) FROM exo_outbox") != 0)
                throw std::runtime_error("exo_outbox still holds rows");
            std::printf("run %d: exo_processed %.0f rows/s, exo_outbox %.0f rows/s\n", run,
                        processed_rates.back(), outbox_rates.back());
            std::fflush(stdout);
            pqxx::nontransaction(admin).exec("DROP SCHEMA " + schema + " CASCADE");
        }
        std::printf("median: exo_processed %.0f rows/s, exo_outbox %.0f rows/s\n",
                    median(processed_rates), median(outbox_rates));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "exo_prune_bench: %s\n", e.what());
        return 1;
    }
}
