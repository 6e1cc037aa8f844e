#include <doctest/doctest.h>

#include <cstring>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "observability/metrics_text.hpp"

using exo::Outcome;
using std::chrono::microseconds;

namespace {

bool has_line(const std::string& text, const std::string& line) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l == line) return true;
    return false;
}

exo::DaemonStatus status_with_partitions() {
    exo::DaemonStatus s;
    s.running = true;
    s.kafka_up = true;
    exo::PartitionStatus a{exo::TopicPartition{exo::Topic{"payments"}, exo::Partition{0}}};
    a.lag = 7;
    exo::PartitionStatus b{exo::TopicPartition{exo::Topic{"payments"}, exo::Partition{1}}};
    b.paused = true;
    s.partitions = {a, b};
    return s;
}

}  // namespace

TEST_CASE("records are exported per topic and outcome, parked included") {
    exo::PipelineStats stats({"payments"});
    stats.record_finished("payments", Outcome::applied, microseconds(1), std::nullopt);
    stats.record_finished("payments", Outcome::applied, microseconds(1), std::nullopt);
    stats.record_finished("payments", Outcome::dead_lettered, microseconds(1), std::nullopt);
    stats.parked_record("payments");
    auto text = exo::render_metrics(stats, status_with_partitions(), true, "0.2.0");
    CHECK(has_line(text, "exo_records_total{topic=\"payments\",outcome=\"applied\"} 2"));
    CHECK(has_line(text, "exo_records_total{topic=\"payments\",outcome=\"dead_lettered\"} 1"));
    CHECK(has_line(text, "exo_records_total{topic=\"payments\",outcome=\"duplicate_redis\"} 0"));
    CHECK(has_line(text, "exo_records_total{topic=\"payments\",outcome=\"duplicate_in_batch\"} 0"));
    CHECK(has_line(text, "exo_records_total{topic=\"payments\",outcome=\"parked\"} 1"));
    // The catch-all "" topic appears only once something was counted under it.
    CHECK(text.find("topic=\"\"") == std::string::npos);
}

TEST_CASE("gauges say what the daemon status says") {
    exo::PipelineStats stats({"payments"});
    auto s = status_with_partitions();
    s.redis_up = false;
    auto text = exo::render_metrics(stats, s, false, "0.2.0");
    CHECK(has_line(text, "exo_consumer_lag{topic=\"payments\",partition=\"0\"} 7"));
    CHECK(text.find("exo_consumer_lag{topic=\"payments\",partition=\"1\"}") ==
          std::string::npos);  // lag unknown: no sample rather than a made-up one
    CHECK(has_line(text, "exo_partitions_assigned 2"));
    CHECK(has_line(text, "exo_partitions_paused 1"));
    CHECK(has_line(text, "exo_dependency_up{dependency=\"redis\"} 0"));
    CHECK(has_line(text, "exo_dependency_up{dependency=\"kafka\"} 1"));
    CHECK(has_line(text, "exo_ready 0"));
    CHECK(has_line(text, "exo_build_info{version=\"0.2.0\"} 1"));
}

TEST_CASE("histograms have cumulative buckets, +Inf, _sum and _count per topic") {
    exo::PipelineStats stats({"payments"});
    stats.handler_ran("payments", microseconds(3000));  // 3 ms
    stats.record_finished("payments", Outcome::applied, microseconds(1), std::chrono::seconds(2));
    auto text = exo::render_metrics(stats, {}, true, "0.2.0");
    CHECK(
        has_line(text, "exo_handler_duration_seconds_bucket{topic=\"payments\",le=\"0.0025\"} 0"));
    CHECK(has_line(text, "exo_handler_duration_seconds_bucket{topic=\"payments\",le=\"0.005\"} 1"));
    CHECK(has_line(text, "exo_handler_duration_seconds_bucket{topic=\"payments\",le=\"+Inf\"} 1"));
    CHECK(has_line(text, "exo_handler_duration_seconds_count{topic=\"payments\"} 1"));
    CHECK(has_line(text, "exo_handler_duration_seconds_sum{topic=\"payments\"} 0.003"));
    CHECK(has_line(text, "exo_record_latency_seconds_bucket{topic=\"payments\",le=\"1\"} 0"));
    CHECK(has_line(text, "exo_record_latency_seconds_bucket{topic=\"payments\",le=\"2.5\"} 1"));
}

TEST_CASE("a batch handler's call counts each of its records with its share of the time") {
    exo::PipelineStats stats({"payments"});
    stats.handler_ran("payments", microseconds(20000), 4);  // 20 ms for 4 records
    stats.handler_ran("payments", microseconds(1000));      // one record, 1 ms
    auto text = exo::render_metrics(stats, {}, true, "0.2.0");
    CHECK(has_line(text, "exo_handler_duration_seconds_bucket{topic=\"payments\",le=\"0.001\"} 1"));
    CHECK(has_line(text, "exo_handler_duration_seconds_bucket{topic=\"payments\",le=\"0.005\"} 5"));
    CHECK(has_line(text, "exo_handler_duration_seconds_count{topic=\"payments\"} 5"));
    CHECK(has_line(text, "exo_handler_duration_seconds_sum{topic=\"payments\"} 0.021"));
}

TEST_CASE("every family is declared once with HELP and TYPE, and every name follows the rules") {
    exo::PipelineStats stats({"payments", "orders"});
    auto text = exo::render_metrics(stats, status_with_partitions(), true, "0.2.0");
    std::istringstream in(text);
    std::set<std::string> typed;
    const std::regex name_rule("^[a-zA-Z_:][a-zA-Z0-9_:]*$");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# TYPE ", 0) == 0) {
            std::istringstream words(line.substr(7));
            std::string name, type;
            words >> name >> type;
            CHECK_MESSAGE(typed.insert(name).second, "declared twice: " << name);
            CHECK(std::regex_match(name, name_rule));
            CHECK(name.rfind("exo_", 0) == 0);
            if (type == "counter") CHECK(name.size() > 6);
            if (type == "counter") CHECK(name.substr(name.size() - 6) == "_total");
        }
    }
    CHECK(typed.count("exo_records_total") == 1);
    CHECK(typed.count("exo_handler_duration_seconds") == 1);
    CHECK(typed.count("exo_consumer_lag") == 1);
}

TEST_CASE("label values are escaped as the text format requires") {
    CHECK(exo::escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
    CHECK(exo::escape_label_value("payments.v2") == "payments.v2");
}

TEST_CASE("the outbox gauges appear once the relay looked, its counters always") {
    exo::PipelineStats stats({"payments"});
    auto before = exo::render_metrics(stats, status_with_partitions(), true, "0.2.0");
    CHECK(has_line(before, "exo_outbox_published_total 0"));
    CHECK(has_line(before, "exo_outbox_failures_total 0"));
    CHECK(before.find("exo_outbox_pending_rows") == std::string::npos);
    stats.outbox_published += 5;
    stats.outbox_failures += 2;
    stats.outbox_pending = 3;
    stats.outbox_oldest_pending_ms = 1500;
    stats.outbox_unit_failures += 4;
    stats.outbox_parked_units = 1;
    auto after = exo::render_metrics(stats, status_with_partitions(), true, "0.2.0");
    CHECK(has_line(after, "exo_outbox_published_total 5"));
    CHECK(has_line(after, "exo_outbox_failures_total 2"));
    CHECK(has_line(after, "# TYPE exo_outbox_pending_rows gauge"));
    CHECK(has_line(after, "exo_outbox_pending_rows 3"));
    CHECK(has_line(after, "exo_outbox_oldest_pending_seconds 1.5"));
    CHECK(has_line(after, "exo_outbox_unit_failures_total 4"));
    CHECK(has_line(after, "# TYPE exo_outbox_parked_units gauge"));
    CHECK(has_line(after, "exo_outbox_parked_units 1"));
}

TEST_CASE("rows pruned are counted per table, and the old dedup counter is their sum") {
    exo::PipelineStats stats({"payments"});
    stats.retention.pruned[exo::RetentionStats::processed] += 7;
    stats.retention.pruned[exo::RetentionStats::sequence_gaps] += 2;
    stats.retention.pruned[exo::RetentionStats::outbox_keys] += 4;
    stats.retention.failures += 1;
    const auto text = exo::render_metrics(stats, exo::DaemonStatus{}, true, "0.2.0");
    CHECK(has_line(text, "# TYPE exo_rows_pruned_total counter"));
    CHECK(has_line(text, "exo_rows_pruned_total{table=\"exo_processed\"} 7"));
    CHECK(has_line(text, "exo_rows_pruned_total{table=\"exo_outbox_keys\"} 4"));
    CHECK(has_line(text, "exo_rows_pruned_total{table=\"exo_replays\"} 0"));
    CHECK(has_line(text, "exo_dedup_rows_pruned_total 9"));
    CHECK(has_line(text, "exo_retention_failures_total 1"));
}

TEST_CASE("the retention lag gauge appears per table once the pruner looked") {
    exo::PipelineStats stats({"payments"});
    CHECK(!has_line(exo::render_metrics(stats, exo::DaemonStatus{}, true, "0.2.0"),
                    "exo_retention_lag_seconds{table=\"exo_processed\"} 0"));
    stats.retention.lag_ms[exo::RetentionStats::processed] = 90500;
    stats.retention.lag_ms[exo::RetentionStats::outbox] = 0;
    const auto text = exo::render_metrics(stats, exo::DaemonStatus{}, true, "0.2.0");
    CHECK(has_line(text, "# TYPE exo_retention_lag_seconds gauge"));
    CHECK(has_line(text, "exo_retention_lag_seconds{table=\"exo_processed\"} 90.5"));
    CHECK(has_line(text, "exo_retention_lag_seconds{table=\"exo_outbox\"} 0"));
    CHECK(text.find("exo_retention_lag_seconds{table=\"exo_outbox_keys\"}") == std::string::npos);
}

namespace {

// The status of a worker running keyed lanes: partition 0 has a slow key holding
// its commit, partition 1 is idle.
exo::DaemonStatus status_with_lanes() {
    auto s = status_with_partitions();
    s.partitions[0].in_flight = 3;
    s.partitions[0].queued = 40;
    s.partitions[0].bytes = 123456;
    s.partitions[0].parked = 12;
    s.partitions[0].parked_bytes = 34567;
    s.partitions[0].unfinished_window = 125000;
    s.batches_in_flight = 4;
    s.held_lanes = 2;
    s.waiting_behind_held = 17;
    s.keys_waiting_behind_held = 6;
    return s;
}

// The lines of `name`'s family: its HELP and TYPE, then its samples.
std::vector<std::string> family_lines(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) {
        const bool comment =
            l.rfind("# HELP " + name + " ", 0) == 0 || l.rfind("# TYPE " + name + " ", 0) == 0;
        const bool sample = l.rfind(name + "{", 0) == 0 || l.rfind(name + " ", 0) == 0;
        if (comment || sample) out.push_back(l);
    }
    return out;
}

}  // namespace

TEST_CASE(
    "records in flight, queued, parked, their bytes and the unfinished window are gauges per "
    "partition") {
    exo::PipelineStats stats({"payments"});
    const auto text = exo::render_metrics(stats, status_with_lanes(), true, "0.2.0");
    CHECK(has_line(text, "exo_records_in_flight{topic=\"payments\",partition=\"0\"} 3"));
    CHECK(has_line(text, "exo_records_queued{topic=\"payments\",partition=\"0\"} 40"));
    CHECK(has_line(text, "exo_records_bytes{topic=\"payments\",partition=\"0\"} 123456"));
    CHECK(has_line(text, "exo_records_parked{topic=\"payments\",partition=\"0\"} 12"));
    CHECK(has_line(text, "exo_records_parked_bytes{topic=\"payments\",partition=\"0\"} 34567"));
    CHECK(
        has_line(text, "exo_unfinished_window_offsets{topic=\"payments\",partition=\"0\"} 125000"));
    // An idle partition shows 0, not no sample: an alert on the window sees it recover.
    CHECK(has_line(text, "exo_records_in_flight{topic=\"payments\",partition=\"1\"} 0"));
    CHECK(has_line(text, "exo_records_queued{topic=\"payments\",partition=\"1\"} 0"));
    CHECK(has_line(text, "exo_unfinished_window_offsets{topic=\"payments\",partition=\"1\"} 0"));
}

TEST_CASE("batches in flight, held lanes and the records waiting behind them are process gauges") {
    exo::PipelineStats stats({"payments"});
    const auto text = exo::render_metrics(stats, status_with_lanes(), true, "0.2.0");
    CHECK(has_line(text, "exo_batches_in_flight 4"));
    CHECK(has_line(text, "exo_held_lanes 2"));
    CHECK(has_line(text, "exo_records_waiting_behind_held 17"));
    CHECK(has_line(text, "exo_keys_waiting_behind_held 6"));
    // A member without partitions still says 0, so its dashboards show a line.
    const auto idle = exo::render_metrics(stats, exo::DaemonStatus{}, true, "0.2.0");
    CHECK(has_line(idle, "exo_batches_in_flight 0"));
    CHECK(has_line(idle, "exo_held_lanes 0"));
    CHECK(has_line(idle, "exo_records_waiting_behind_held 0"));
    CHECK(idle.find("exo_unfinished_window_offsets{") == std::string::npos);
}

TEST_CASE("each lane gauge is one gauge family: HELP, TYPE, then all of its samples") {
    exo::PipelineStats stats({"payments"});
    const auto text = exo::render_metrics(stats, status_with_lanes(), true, "0.2.0");
    const std::pair<const char*, std::size_t> families[] = {
        {"exo_records_in_flight", 2},
        {"exo_records_queued", 2},
        {"exo_records_bytes", 2},
        {"exo_records_parked", 2},
        {"exo_records_parked_bytes", 2},
        {"exo_unfinished_window_offsets", 2},
        {"exo_batches_in_flight", 1},
        {"exo_held_lanes", 1},
        {"exo_records_waiting_behind_held", 1},
        {"exo_keys_waiting_behind_held", 1},
    };
    for (const auto& [name, samples] : families) {
        CAPTURE(name);
        const auto lines = family_lines(text, name);
        REQUIRE(lines.size() == 2 + samples);
        CHECK(lines[0].rfind(std::string("# HELP ") + name + " ", 0) == 0);
        CHECK(lines[0].size() > std::string("# HELP ").size() + std::strlen(name) + 1);
        CHECK(lines[1] == std::string("# TYPE ") + name + " gauge");
        // Contiguous in the text: promtool refuses a family whose samples are split.
        const auto block = lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n";
        CHECK(text.find(block) != std::string::npos);
        if (samples == 2) CHECK(text.find(lines[2] + "\n" + lines[3] + "\n") != std::string::npos);
    }
}
