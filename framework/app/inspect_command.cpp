// `exo inspect --config F --key K [--json]`: everything exo knows about one
// idempotency key, read-only. Exit 3 when the group has never seen the key.
#include <iostream>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "app/operator_setup.hpp"
#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "kafka/topic_reader.hpp"
#include "ops/claim_view.hpp"
#include "ops/dedup_queries.hpp"
#include "ops/ops_report.hpp"
#include "pg/session.hpp"
#include "redis/claim_store.hpp"
#include "redis/redis_error.hpp"
#include "runtime/sessions/redis_session.hpp"

namespace exo {
namespace {

// The entity lives in the payload, not in the dedup row, so it is read from the
// record at the row's coordinates; a record Kafka no longer keeps leaves it
// unknown, which is said rather than failed on.
std::optional<SequenceView> sequence_of(const Config& config, const DedupRow& row,
                                        pqxx::connection& pg) {
    const BindingConfig* binding = nullptr;
    for (const auto& b : config.bindings)
        if (b.topic == row.topic) binding = &b;
    if (binding == nullptr || !binding->sequence) return std::nullopt;
    // Under the name exo_sequences has for it in this group (scope: group).
    SequenceView view{
        sequence_owner(binding->handler, binding->sequence->scope, config.kafka.group_id),
        std::nullopt, std::nullopt, ""};
    try {
        TopicReader reader(operator_bootstrap(config), config.kafka.properties);
        auto record =
            reader.read_at(row.topic, row.partition, row.offset, std::chrono::seconds(10));
        if (!record) {
            view.note = "the record is no longer in Kafka, so its entity is unknown";
            return view;
        }
        JsonPayload payload(record->value);
        view.entity = extract_sequence(*binding->sequence, payload).entity;
        view.last_sequence = find_last_sequence(pg, view.handler, *view.entity);
        if (!view.last_sequence) view.note = "the entity has no sequence yet";
    } catch (const std::exception& e) {
        view.note = std::string("could not read the entity: ") + e.what();
    }
    return view;
}

void read_redis_claim(const Config& config, InspectReport& report) {
    try {
        auto redis = open_redis(config.redis);
        report.claim = read_claim(*redis, claim_key(key_layout(*redis), config.redis.key_prefix,
                                                    report.group, report.key));
    } catch (const RedisError& e) {
        // What PostgreSQL says is still worth printing: it is the truth.
        report.claim_error = e.what();
    }
}

}  // namespace

int inspect_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("inspect", argc, argv, 2, {"config", "key"}, {"json"});
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    const std::string key = args.required("key");
    const std::string& group = config.kafka.group_id;

    auto pg = open_postgres_session(config.postgres);
    InspectReport report;
    report.group = group;
    report.key = key;
    report.row = find_dedup_row(*pg, group, key);
    report.replay = find_replay_ticket(*pg, group, key);
    // With claim.store: postgres there is no claim to read and no Redis to ask.
    report.claims_in_redis = config.claim.in_redis();
    if (report.claims_in_redis) read_redis_claim(config, report);
    if (report.row) report.sequence = sequence_of(config, *report.row, *pg);

    if (args.has("json"))
        // A key from the command line need not be UTF-8: invalid bytes print as U+FFFD.
        std::cout << to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
    else
        std::cout << to_text(report);
    return report.known() ? 0 : kExitUnknownKey;
}

}  // namespace exo
