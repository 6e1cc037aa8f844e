// `exo dlq list` and `exo dlq replay` (docs/operations.md): the dead letters of
// the config's consumer group, and processing them once more, exactly once.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <set>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "app/dlq_options.hpp"
#include "app/operator_setup.hpp"
#include "kafka/kafka_error.hpp"
#include "ops/dead_letter_topics.hpp"
#include "ops/dedup_queries.hpp"
#include "ops/ops_report.hpp"
#include "ops/replay.hpp"
#include "pg/session.hpp"
#include "runtime/sessions/redis_session.hpp"

namespace exo {
namespace {

template <typename T>
void print(const Arguments& args, const T& value) {
    if (args.has("json"))
        // Keys, reasons and topics come from records whoever can produce to a
        // topic wrote: bytes that are not UTF-8 print as U+FFFD, the document stays valid.
        std::cout << to_json(value).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
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

// Every dead letter the group has not settled: the DEAD_LETTERED rows and
// unfinished replays PostgreSQL holds, and the letters only the dead-letter
// topics hold (ops/unsettled_letters.hpp).
std::vector<DeadLetterEntry> group_dead_letters(pqxx::connection& pg, const std::string& group,
                                                DeadLetterTopics& topics,
                                                const DeadLetterSelection& selection) {
    auto from_postgres = list_dead_letters(pg, group, selection);
    auto all_letters = topics.letters();
    const auto groupless = std::count_if(all_letters.begin(), all_letters.end(),
                                         [](const LetterView& l) { return !l.group; });
    if (groupless > 0)
        std::cerr << "exo: " << groupless
                  << " record(s) of the dead-letter topics name no consumer group (written by an "
                     "exo before it named the group, or not by exo) and are ignored: no group "
                     "can tell they are its own\n";
    const auto letters = letters_of_group(std::move(all_letters), group);
    auto from_letters = unsettled_letters(letters, find_letter_states(pg, group, letters));
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return merge_entries(std::move(from_postgres), std::move(from_letters), selection, now_ms);
}

// --key K: what to replay, a result saying why not, or nullopt for an unknown key.
struct KeyPlan {
    std::vector<DeadLetterEntry> entries;
    std::vector<ReplayResult> skipped;
};
std::optional<KeyPlan> plan_key(pqxx::connection& pg, const std::string& group,
                                const std::string& key, DeadLetterTopics& topics) {
    auto row = find_dedup_row(pg, group, key);
    auto ticket = find_replay_ticket(pg, group, key);
    KeyPlan plan;
    auto skip = [&](std::string why) {
        plan.skipped.push_back({key, ReplayResult::Status::skipped, std::move(why), ""});
    };
    if (row && row->outcome == "DEAD_LETTERED") {
        plan.entries.push_back(entry_of(key, *row));
        return plan;
    }
    if (row && ticket) {
        skip("already replayed: processed with outcome " + row->outcome);
        return plan;
    }
    if (row) {
        // A gap-timed-out key that a later copy applied: the dedup row would
        // answer a replayed copy DUPLICATE, so there is nothing to produce.
        skip("already " + std::string(row->outcome == "APPLIED" ? "applied" : "decided") +
             ": its dedup row says " + row->outcome + " (" + row->processed_at +
             "); a replayed copy would be a duplicate, so nothing was produced");
        return plan;
    }
    // No row: the dead-letter topics may know the key (a letter without a dedup
    // row), or know that a replay's copy was dead-lettered again.
    for (auto& e : group_dead_letters(pg, group, topics, {}))
        if (e.key == key && e.state != DeadLetterState::replay_sent)
            plan.entries.push_back(std::move(e));
    if (!plan.entries.empty()) return plan;
    if (ticket && ticket->produced_at) {
        skip("already re-produced at " + *ticket->produced_at +
             "; the daemon has not processed it yet");
        return plan;
    }
    if (ticket) {
        plan.entries.push_back(entry_of(key, *ticket));
        return plan;
    }
    return std::nullopt;
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

// --entity E: the entity's dead letters in sequence order, so a strict binding
// applies them one after the other (docs/operations.md, "Recovering a strict
// entity"). A letter at or below the entity's last sequence would only be
// STALE: it is reported, not produced.
std::vector<DeadLetterEntry> entity_in_order(std::vector<DeadLetterEntry> candidates,
                                             const std::string& entity, const Config& config,
                                             pqxx::connection& pg, DeadLetterReplayer& replayer,
                                             std::vector<ReplayResult>& results) {
    struct Found {
        std::int64_t sequence;
        std::string handler;
        DeadLetterEntry entry;
    };
    std::vector<Found> found;
    for (auto& e : candidates) {
        std::optional<SequenceValue> seq;
        try {
            seq = replayer.sequence_of(e);
        } catch (const PermanentError&) {
            continue;  // no readable entity in its record: of no entity
        } catch (const UsageError&) {
            continue;  // its topic has no binding here: `--all` says so
        } catch (const ReplaySourceGone&) {
            continue;  // its entity cannot be known: `--all` or `--key` says so
        }
        if (!seq || seq->entity != entity) continue;
        std::string handler;
        for (const auto& b : config.bindings)
            if (b.topic == e.topic && b.sequence)
                handler = sequence_owner(b.handler, b.sequence->scope, config.kafka.group_id);
        found.push_back({seq->sequence, handler, std::move(e)});
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const Found& a, const Found& b) { return a.sequence < b.sequence; });
    std::vector<DeadLetterEntry> out;
    for (auto& f : found) {
        auto last = find_last_sequence(pg, f.handler, entity);
        if (last && f.sequence <= *last) {
            results.push_back({f.entry.key, ReplayResult::Status::skipped,
                               "sequence " + std::to_string(f.sequence) +
                                   " is not after the entity's last sequence " +
                                   std::to_string(*last) +
                                   " (advanced past it?): a replayed copy would be STALE, so "
                                   "nothing was produced",
                               ""});
            continue;
        }
        out.push_back(std::move(f.entry));
    }
    return out;
}

int dlq_list(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("dlq list", argc, argv, 3, {"config", "topic", "since"}, {"json"});
    const DeadLetterSelection selection = list_selection(args);
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    auto pg = open_postgres_session(config.postgres);
    std::vector<DeadLetterEntry> entries;
    int exit_code = 0;
    // Kafka unreachable, or an embedded mock cluster without its bootstrap
    // file: what PostgreSQL holds is still worth printing; the letters without
    // a dedup row are missing from it, which the exit code says.
    auto without_letters = [&](const std::exception& e) {
        errors.print("dlq list", "could not read the dead-letter topics (" + std::string(e.what()) +
                                     "): dead letters without a dedup row (gap timeouts, keyless "
                                     "records) are missing from this list");
        entries = list_dead_letters(*pg, config.kafka.group_id, selection);
        exit_code = 1;
    };
    try {
        TopicReader reader(operator_bootstrap(config), config.kafka.properties);
        DeadLetterTopics topics(config.bindings, reader);
        entries = group_dead_letters(*pg, config.kafka.group_id, topics, selection);
    } catch (const KafkaError& e) {
        without_letters(e);
    } catch (const UsageError& e) {
        without_letters(e);
    }
    print(args, entries);
    return exit_code;
}

int dlq_replay(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("dlq replay", argc, argv, 3,
                   {"config", "key", "offset", "topic", "partition", "entity"},
                   {"all", "dry-run", "json", "trust-unverified"});
    const DeadLetterSelection selection = replay_selection(args);
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    auto failpoints = Failpoints::from_environment();
    const std::string& group = config.kafka.group_id;
    auto pg = open_postgres_session(config.postgres);
    const std::string bootstrap = operator_bootstrap(config);
    TopicReader reader(bootstrap, config.kafka.properties);
    DeadLetterTopics topics(config.bindings, reader);

    std::vector<DeadLetterEntry> entries;
    std::vector<ReplayResult> results;
    if (selection.key) {
        auto plan = plan_key(*pg, group, *selection.key, topics);
        if (!plan) {
            errors.print("dlq replay",
                         "unknown key '" + *selection.key + "' in group '" + group +
                             "': no dedup row, no replay and no dead letter of it (see exo "
                             "inspect)");
            return kExitUnknownKey;
        }
        entries = std::move(plan->entries);
        results = std::move(plan->skipped);
    } else {
        for (auto& e : group_dead_letters(*pg, group, topics, selection))
            if (e.state != DeadLetterState::replay_sent) entries.push_back(std::move(e));
        if (selection.offset) require_one_record(entries);
    }

    int exit_code = 0;
    if (!entries.empty()) {
        // With claim.store: postgres there is no claim to forget and no Redis to open.
        std::unique_ptr<RedisRouter> redis;
        if (config.claim.in_redis()) redis = open_redis(config.redis);
        KafkaProducer producer(operator_producer(bootstrap, config.kafka));
        DeadLetterReplayer replayer({config, *pg, redis.get(), reader, topics, producer, failpoints,
                                     args.has("trust-unverified"), [&](const std::string& text) {
                                         errors.print("dlq replay", text);
                                     }});
        if (selection.entity)
            entries = entity_in_order(std::move(entries), *selection.entity, config, *pg, replayer,
                                      results);
        // --all goes past a keyless letter it cannot replay; naming one is an error.
        // Past a letter refused as a usage error (its record would derive another
        // key, its topic has no binding here) too, but that fails the command.
        const bool named = selection.key || selection.offset;
        for (const auto& entry : entries) {
            try {
                results.push_back(replayer.replay(entry, args.has("dry-run")));
            } catch (const ReplaySourceGone& e) {
                // One lost record must not hold back the others of --all.
                results.push_back({entry.key, ReplayResult::Status::skipped, e.what(), ""});
                exit_code = 1;
            } catch (const ReplayUnverified& e) {
                // A letter someone else wrote: --all goes on, and the command fails so
                // that it is seen.
                results.push_back({entry.key, ReplayResult::Status::skipped, e.what(), ""});
                exit_code = 1;
            } catch (const ReplayRefused& e) {
                results.push_back({entry.key, ReplayResult::Status::skipped, e.what(), ""});
                if (named) exit_code = 1;
            } catch (const UsageError& e) {
                if (named) throw;
                results.push_back({entry.key, ReplayResult::Status::skipped, e.what(), ""});
                exit_code = 1;
            }
        }
    }
    print(args, results);
    return exit_code;
}

}  // namespace

int dlq_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    const std::string sub = argc >= 3 ? argv[2] : "";
    if (sub == "list") return dlq_list(argc, argv, setup, errors);
    if (sub == "replay") return dlq_replay(argc, argv, setup, errors);
    throw UsageError("say `list` or `replay`" +
                     (sub.empty() ? std::string() : ", not '" + sub + "'") + " (see exo --help)");
}

}  // namespace exo
