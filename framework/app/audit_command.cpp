// `exo audit --config F --topic T [--partition P] [--from N] [--to N] [--json]`
// (docs/operations.md): proves a range of a topic was processed exactly once,
// or lists what is not accounted for. Read-only everywhere.
//
// How, in bounded memory whatever the range:
//   1. the binding's dead-letter topic is read once, keeping only the
//      coordinates its group's letters name inside the range (bounded by the
//      letters, not by the range);
//   2. each partition's range is read with an independent consumer (assigned,
//      no group) in chunks of --chunk records (default 5,000); each chunk's keys are derived by
//      the pipeline's own function and looked up in one statement; each
//      record's fingerprint is computed as the daemon computes it (a copy of an
//      applied key whose fingerprint differs from the row's is a reused key, its
//      event never applied); every record is classified (ops/audit_verdict.hpp)
//      and forgotten;
//   3. the dedup rows whose coordinates lie in the range are read through a
//      cursor; one that no record of the range matched (a key hash per offset) names
//      a record that is missing.
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <set>
#include <unordered_map>
#include <utility>

#include <pqxx/except>

#include "app/arguments.hpp"
#include "app/audit_options.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "app/operator_setup.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "core/record_fingerprint.hpp"
#include "kafka/group_progress.hpp"
#include "kafka/topic_reader.hpp"
#include "ops/audit_queries.hpp"
#include "ops/audit_verdict.hpp"
#include "ops/unsettled_letters.hpp"
#include "pg/session.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kKafkaTimeout{30};
constexpr std::chrono::seconds kProgressEvery{5};

const BindingConfig& binding_of(const Config& config, const std::string& topic) {
    std::string list;
    for (const auto& b : config.bindings) {
        if (b.topic == topic) return b;
        list += (list.empty() ? "" : ", ") + b.topic;
    }
    throw UsageError("topic '" + topic + "' has no binding in this config (bound topics: " + list +
                     "): audit with the config of the daemon that consumes it");
}

bool unknown_topic(const KafkaError& e) {
    return e.code() == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
           e.code() == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
}

// PostgreSQL down (or gone mid-run): the one message that says what to do.
[[noreturn]] void postgres_unreachable(const pqxx::broken_connection& e, const std::string& when) {
    throw DependencyError("PostgreSQL cannot be reached " + when + " (" + e.what() +
                          "): start it or fix postgres.uri in the config, then run the audit "
                          "again; nothing was changed");
}

struct PartitionRange {
    int partition;
    AuditRange range;
    std::optional<std::int64_t> committed;
    std::int64_t gone_unconsumed = 0;  // AuditTally::Range
};

// What step 3 needs of each offset of the range: whether a record was seen
// there, and a hash of the key of the row that named it (0: none did). Four
// bytes per offset (a million offsets: 4 MB): a row naming a matched offset
// with another key (two rows, one record) is still caught.
struct SeenOffsets {
    std::int64_t from = 0;
    std::vector<bool> seen;
    std::vector<std::uint32_t> matched;
    explicit SeenOffsets(const AuditRange& r)
        : from(r.from),
          seen(static_cast<std::size_t>(std::max<std::int64_t>(0, r.to - r.from + 1))),
          matched(seen.size()) {}
    std::size_t at(std::int64_t offset) const { return static_cast<std::size_t>(offset - from); }
    static std::uint32_t hash(const std::string& key) {
        return static_cast<std::uint32_t>(std::hash<std::string>{}(key)) | 1u;
    }
};

class Audit {
public:
    Audit(const Config& config, const BindingConfig& binding, pqxx::connection& pg,
          TopicReader& reader, std::size_t chunk, bool stream_problems)
        : chunk_(chunk),
          binding_(binding),
          pg_(pg),
          reader_(reader),
          stream_problems_(stream_problems) {
        tally_.group = config.kafka.group_id;
        tally_.topic = binding.topic;
    }

    void read_letters(const std::vector<PartitionRange>& ranges) {
        std::vector<int> partitions;
        try {
            const int count = reader_.partition_count(binding_.dead_letter_topic, kKafkaTimeout);
            for (int p = 0; p < count; ++p) partitions.push_back(p);
        } catch (const KafkaError& e) {
            // Created by the first dead letter when Kafka auto-creates topics.
            if (!unknown_topic(e)) throw;
        }
        std::map<int, AuditRange> wanted;
        for (const auto& r : ranges) wanted[r.partition] = r.range;
        for (int p : partitions) {
            const auto [low, high] =
                reader_.watermarks(binding_.dead_letter_topic, p, kKafkaTimeout);
            reader_.scan(
                binding_.dead_letter_topic, p, low, high - 1, chunk_, kKafkaTimeout,
                [&](std::vector<Record>& records) {
                    for (const auto& r : records) {
                        auto l = read_letter(r);
                        if (!l || l->group != tally_.group || l->at.topic != binding_.topic)
                            continue;
                        auto w = wanted.find(l->at.partition);
                        if (w == wanted.end() || l->at.offset < w->second.from ||
                            l->at.offset > w->second.to)
                            continue;
                        letters_.insert({l->at.partition, l->at.offset});
                    }
                });
        }
    }

    void audit(const PartitionRange& pr) {
        tally_.ranges.push_back(
            {pr.partition, pr.range.from, pr.range.to, pr.committed, pr.gone_unconsumed});
        SeenOffsets offsets(pr.range);
        reader_.scan(binding_.topic, pr.partition, pr.range.from, pr.range.to, chunk_,
                     kKafkaTimeout, [&](std::vector<Record>& records) {
                         audit_chunk(records, pr, offsets);
                         progress(pr, records.back().offset.value);
                     });
        scan_audit_rows(
            pg_, tally_.group, binding_.topic, pr.partition, pr.range.from, pr.range.to, chunk_,
            [&](const AuditRow& row) {
                const auto i = offsets.at(row.at.offset);
                if (offsets.matched[i] == SeenOffsets::hash(row.key)) return;
                ++tally_.rows_without_record;
                problem({row.at, row.key,
                         offsets.seen[i] ? "its dedup row names this record, which derives "
                                           "another key"
                                         : "its dedup row names this record, which Kafka does "
                                           "not hold (compacted or deleted)"});
            });
    }

    const AuditTally& tally() const { return tally_; }

private:
    void audit_chunk(std::vector<Record>& records, const PartitionRange& pr, SeenOffsets& offsets) {
        std::vector<AuditFacts> facts(records.size());
        std::vector<std::string> keys;
        keys.reserve(records.size());
        for (std::size_t i = 0; i < records.size(); ++i) {
            const Record& r = records[i];
            auto& f = facts[i];
            f.at = {r.topic.value, r.partition.value, r.offset.value};
            f.committed = pr.committed;
            f.letter = letters_.contains({r.partition.value, r.offset.value});
            // The pipeline's own derivation (protocol/steps/keys.cpp), so every
            // key source it knows is audited as it is consumed.
            JsonPayload payload(r.value);
            try {
                f.key = derive_idempotency_key(binding_.key, r, payload);
                keys.push_back(*f.key);
            } catch (const PermanentError& e) {
                f.no_key_reason = e.what();
            }
            // As protocol/steps/keys.cpp computes it, but whatever the binding's
            // on_key_reuse: the audit is the independent check. A row without one
            // (ignore, or written before sql/0013) leaves the comparison out.
            if (f.key) {
                try {
                    f.fingerprint = record_fingerprint(binding_.key, r.value, *f.key);
                } catch (const PermanentError&) {
                    // Derived from the same text as the key, so not expected:
                    // unknown, never taken for a reuse.
                }
            }
            offsets.seen[offsets.at(r.offset.value)] = true;
        }
        std::unordered_map<std::string, AuditRow> rows;
        for (auto& row : find_audit_rows(pg_, tally_.group, keys)) {
            std::string key = row.key;
            rows.emplace(std::move(key), std::move(row));
        }
        for (auto& f : facts) {
            if (f.key) {
                auto it = rows.find(*f.key);
                if (it != rows.end()) f.row = it->second;
            }
            if (f.row && f.row->at.topic == f.at.topic && f.row->at.partition == f.at.partition &&
                f.row->at.offset == f.at.offset)
                offsets.matched[offsets.at(f.at.offset)] = SeenOffsets::hash(*f.key);
            const auto c = classify_record(f);
            tally_.count(c.verdict);
            if (c.verdict == AuditVerdict::unaccounted || c.verdict == AuditVerdict::key_reused)
                problem({f.at, f.key.value_or(""), c.why, c.verdict});
        }
    }

    void problem(AuditProblem p) {
        if (stream_problems_) std::cout << problem_line(p) << std::flush;
        tally_.add_problem(std::move(p));
    }

    void progress(const PartitionRange& pr, std::int64_t offset) {
        if (Clock::now() - last_progress_ < kProgressEvery) return;
        last_progress_ = Clock::now();
        std::cerr << "exo audit: " << tally_.records << " record(s) audited; partition "
                  << pr.partition << " at offset " << offset << " of " << pr.range.from << ".."
                  << pr.range.to << "\n";
    }

    const std::size_t chunk_;  // records per key lookup, rows per cursor page
    const BindingConfig& binding_;
    pqxx::connection& pg_;
    TopicReader& reader_;
    const bool stream_problems_;  // text form: each problem printed as found
    AuditTally tally_;
    std::set<std::pair<int, std::int64_t>> letters_;  // (partition, offset) a letter names
    Clock::time_point last_progress_ = Clock::now();
};

}  // namespace

int audit_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("audit", argc, argv, 2, {"config", "topic", "partition", "from", "to", "chunk"},
                   {"json"});
    const AuditRequest request = audit_request(args);
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    const BindingConfig& binding = binding_of(config, request.topic);
    const std::string& group = config.kafka.group_id;

    std::unique_ptr<pqxx::connection> pg;
    try {
        pg = open_postgres_session(config.postgres);
    } catch (const pqxx::broken_connection& e) {
        postgres_unreachable(e, "before the audit started");
    }
    const std::string bootstrap = operator_bootstrap(config);
    TopicReader reader(bootstrap, config.kafka.properties);

    int partitions = 0;
    try {
        partitions = reader.partition_count(request.topic, kKafkaTimeout);
    } catch (const KafkaError& e) {
        if (!unknown_topic(e)) throw;
        throw UsageError("topic '" + request.topic + "' does not exist in Kafka at " + bootstrap +
                         ": check --topic and kafka.bootstrap_servers");
    }
    std::vector<int> chosen;
    if (request.partition) {
        if (*request.partition >= partitions)
            throw UsageError("--partition " + std::to_string(*request.partition) + ": topic '" +
                             request.topic + "' has partitions 0.." +
                             std::to_string(partitions - 1));
        chosen.push_back(*request.partition);
    } else {
        for (int p = 0; p < partitions; ++p) chosen.push_back(p);
    }
    const auto committed = committed_offsets(bootstrap, config.kafka.properties, group,
                                             request.topic, chosen, kKafkaTimeout);
    std::vector<PartitionRange> ranges;
    for (int p : chosen) {
        const auto [low, high] = reader.watermarks(request.topic, p, kKafkaTimeout);
        TimeOffsets times;
        if (request.from_time_ms)
            times.from =
                reader.offset_for_time(request.topic, p, *request.from_time_ms, kKafkaTimeout);
        if (request.to_time_ms)
            times.after_to =
                reader.offset_for_time(request.topic, p, *request.to_time_ms + 1, kKafkaTimeout);
        auto c = committed.find(p);
        const AuditRange range = audit_range(request, p, low, high, times);
        // Kafka's offsets for times is the one source here; say when it left a
        // partition with records out (librdkafka's mock cluster answers none).
        if (request.from_time_ms && low < high && range.to < range.from)
            errors.print("audit", "partition " + std::to_string(p) +
                                      ": Kafka has no record at or after --from " +
                                      *args.get("from") + "; nothing audited there");
        const auto at = c == committed.end() ? std::nullopt : c->second;
        ranges.push_back({p, range, at, at && *at < low ? low - *at : 0});
    }

    Audit audit(config, binding, *pg, reader, request.chunk, !request.json);
    try {
        audit.read_letters(ranges);
        for (const auto& r : ranges) audit.audit(r);
    } catch (const pqxx::broken_connection& e) {
        postgres_unreachable(e, "during the audit");
    }
    if (request.json)
        // Keys come from records whoever can produce to the topic wrote: bytes
        // that are not UTF-8 print as U+FFFD, the document stays valid.
        std::cout
            << to_json(audit.tally()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
    else
        std::cout << to_text(audit.tally());
    return audit.tally().accounted() ? 0 : kExitUnaccounted;
}

}  // namespace exo
