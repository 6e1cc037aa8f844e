// `exo dlq list` and `exo dlq replay` (docs/operations.md): the dead letters of
// the config's consumer group, and processing them once more, exactly once.
#include <iostream>
#include <set>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "app/dlq_options.hpp"
#include "app/operator_setup.hpp"
#include "ops/dedup_queries.hpp"
#include "ops/ops_report.hpp"
#include "ops/replay.hpp"
#include "pg/session.hpp"

namespace exo {
namespace {

template <typename T>
void print(const Arguments& args, const T& value) {
    if (args.has("json"))
        std::cout << to_json(value).dump(2) << "\n";
    else
        std::cout << to_text(value);
}

DeadLetterEntry entry_of(const std::string& key, const DedupRow& row) {
    return {key,        DeadLetterState::dead_lettered, row.topic,        row.partition,
            row.offset, row.result.value_or(""),        row.processed_at, row.applied_by};
}

DeadLetterEntry entry_of(const std::string& key, const ReplayTicket& t) {
    return {key,
            DeadLetterState::replay_pending,
            t.topic,
            t.partition,
            t.offset,
            t.reason,
            t.dead_lettered_at,
            std::nullopt};
}

// --key K: what to replay, a result saying why not, or nullopt for an unknown key.
struct KeyPlan {
    std::vector<DeadLetterEntry> entries;
    std::vector<ReplayResult> skipped;
};
std::optional<KeyPlan> plan_key(pqxx::connection& pg, const std::string& group,
                                const std::string& key) {
    auto row = find_dedup_row(pg, group, key);
    auto ticket = find_replay_ticket(pg, group, key);
    KeyPlan plan;
    auto skip = [&](std::string why) {
        plan.skipped.push_back({key, ReplayResult::Status::skipped, std::move(why), ""});
    };
    if (row && row->outcome == "DEAD_LETTERED")
        plan.entries.push_back(entry_of(key, *row));
    else if (row && ticket)
        skip("already replayed: processed with outcome " + row->outcome);
    else if (row)
        skip("not dead-lettered: its outcome is " + row->outcome);
    else if (ticket && ticket->produced_at)
        skip("already re-produced at " + *ticket->produced_at +
             "; the daemon has not processed it yet");
    else if (ticket)
        plan.entries.push_back(entry_of(key, *ticket));
    else
        return std::nullopt;
    return plan;
}

// --offset N names the original record's offset, which several partitions or
// topics may share: then the operator must say which.
void require_one_record(const std::vector<DeadLetterEntry>& entries) {
    std::set<std::string> where;
    for (const auto& e : entries) where.insert(e.topic + "/" + std::to_string(e.partition));
    if (where.size() <= 1) return;
    std::string list;
    for (const auto& w : where) list += (list.empty() ? "" : ", ") + w;
    throw UsageError("--offset matches dead letters in " + list +
                     " (topic/partition): narrow it with --topic and --partition");
}

int dlq_list(int argc, char** argv, const AppSetup& setup) {
    Arguments args("dlq list", argc, argv, 3, {"config", "topic", "since"}, {"json"});
    const DeadLetterSelection selection = list_selection(args);
    const Config config = load_config(args.required("config"), setup.handlers);
    auto pg = open_postgres_session(config.postgres);
    print(args, list_dead_letters(*pg, config.kafka.group_id, selection));
    return 0;
}

int dlq_replay(int argc, char** argv, const AppSetup& setup) {
    Arguments args("dlq replay", argc, argv, 3, {"config", "key", "offset", "topic", "partition"},
                   {"all", "dry-run", "json"});
    const DeadLetterSelection selection = replay_selection(args);
    const Config config = load_config(args.required("config"), setup.handlers);
    auto failpoints = Failpoints::from_environment();
    const std::string& group = config.kafka.group_id;
    auto pg = open_postgres_session(config.postgres);

    std::vector<DeadLetterEntry> entries;
    std::vector<ReplayResult> results;
    if (selection.key) {
        auto plan = plan_key(*pg, group, *selection.key);
        if (!plan) {
            std::cerr << "exo dlq replay: unknown key '" << *selection.key << "' in group '"
                      << group << "': no dedup row and no replay (see exo inspect)\n";
            return kExitUnknownKey;
        }
        entries = std::move(plan->entries);
        results = std::move(plan->skipped);
    } else {
        for (auto& e : list_dead_letters(*pg, group, selection))
            if (e.state != DeadLetterState::replay_sent) entries.push_back(std::move(e));
        if (selection.offset) require_one_record(entries);
    }

    int exit_code = 0;
    if (!entries.empty()) {
        const std::string bootstrap = operator_bootstrap(config);
        RedisConnection redis(operator_redis(config.redis));
        TopicReader reader(bootstrap, config.kafka.properties);
        KafkaProducer producer(operator_producer(bootstrap, config.kafka));
        DeadLetterReplayer replayer({config, *pg, redis, reader, producer, failpoints});
        for (const auto& entry : entries) {
            try {
                results.push_back(replayer.replay(entry, args.has("dry-run")));
            } catch (const ReplaySourceGone& e) {
                // One lost record must not hold back the others of --all.
                results.push_back({entry.key, ReplayResult::Status::skipped, e.what(), ""});
                exit_code = 1;
            }
        }
    }
    print(args, results);
    return exit_code;
}

}  // namespace

int dlq_command(int argc, char** argv, const AppSetup& setup) {
    const std::string sub = argc >= 3 ? argv[2] : "";
    if (sub == "list") return dlq_list(argc, argv, setup);
    if (sub == "replay") return dlq_replay(argc, argv, setup);
    throw UsageError("say `list` or `replay`" +
                     (sub.empty() ? std::string() : ", not '" + sub + "'") + " (see exo --help)");
}

}  // namespace exo
