#include "ops/replay.hpp"

#include <exo/payload.hpp>
#include "core/key_derivation.hpp"
#include "ops/claim_view.hpp"
#include "ops/dedup_queries.hpp"
#include "ops/replayed_record.hpp"
#include "redis/claim_store.hpp"

namespace exo {
namespace {

constexpr std::chrono::seconds kKafkaTimeout{30};

const BindingConfig& binding_of(const Config& config, const std::string& topic) {
    for (const auto& b : config.bindings)
        if (b.topic == topic) return b;
    throw UsageError("topic '" + topic +
                     "' has no binding in this config: replay with the config of the daemon "
                     "that consumes it");
}

// The key the daemon will derive from the replayed record must be the dead
// letter's: only then does the dedup row keep the replay exactly once.
void check_same_key(const BindingConfig& binding, const OutgoingRecord& out,
                    const std::string& key) {
    if (binding.key.kind == KeySourceKind::coordinates)
        throw UsageError("the binding of topic '" + binding.topic +
                         "' derives keys from the record's coordinates, which a re-produced "
                         "record does not keep: exactly once could not hold, so exo does not "
                         "replay it; nothing was changed");
    Record consumed = as_consumed(out);
    JsonPayload payload(consumed.value);
    std::string derived;
    try {
        derived = derive_idempotency_key(binding.key, consumed, payload);
    } catch (const PermanentError& e) {
        throw UsageError("the replayed record of key '" + key + "' would have no key of its own (" +
                         e.what() + "); nothing was changed");
    }
    if (derived != key)
        throw UsageError("the replayed record would derive key '" + derived + "', not '" + key +
                         "'; nothing was changed");
}

}  // namespace

const std::vector<Record>& DeadLetterReplayer::dead_letters(const std::string& dlq_topic) {
    auto it = dead_letters_.find(dlq_topic);
    if (it == dead_letters_.end())
        it = dead_letters_.emplace(dlq_topic, s_.reader.read_all(dlq_topic, kKafkaTimeout)).first;
    return it->second;
}

OutgoingRecord DeadLetterReplayer::find_record(const DeadLetterEntry& entry,
                                               const BindingConfig& binding, std::string& source) {
    const OriginalCoordinates at{entry.topic, entry.partition, entry.offset};
    const Record* found = nullptr;
    for (const auto& r : dead_letters(binding.dead_letter_topic))
        if (is_dead_letter_of(r, entry.key, at)) found = &r;  // the latest copy
    if (found != nullptr && !value_omitted(*found)) {
        source = "its dead letter " +
                 to_text({found->topic.value, found->partition.value, found->offset.value});
        return replay_of_dead_letter(*found, at);
    }
    if (auto original = s_.reader.read_at(at.topic, at.partition, at.offset, kKafkaTimeout)) {
        source = "the original record " + to_text(at);
        return replay_of_original(*original);
    }
    throw ReplaySourceGone(
        "the record of key '" + entry.key + "' is gone: " +
        (found != nullptr ? "its dead letter in '" + binding.dead_letter_topic +
                                "' was sent without its value (too large)"
                          : "no dead letter of it is left in '" + binding.dead_letter_topic + "'") +
        ", and Kafka no longer keeps " + to_text(at) +
        " (retention or compaction). Nothing was changed; re-produce the event by hand with its "
        "key, then see docs/operations.md");
}

ReplayResult DeadLetterReplayer::replay(const DeadLetterEntry& entry, bool dry_run) {
    const std::string& group = s_.config.kafka.group_id;
    const BindingConfig& binding = binding_of(s_.config, entry.topic);
    std::string source;
    OutgoingRecord out = find_record(entry, binding, source);
    check_same_key(binding, out, entry.key);
    if (dry_run) return {entry.key, ReplayResult::Status::would_replay, "from " + source, ""};

    if (entry.state == DeadLetterState::dead_lettered) {
        if (!open_replay_ticket(s_.postgres, group, entry.key))
            return {entry.key, ReplayResult::Status::skipped,
                    "no longer DEAD_LETTERED (replayed meanwhile?): see exo inspect", ""};
        s_.failpoints.hit("replay_after_ticket");
    }
    forget_claim(s_.redis, claim_key(s_.config.redis.key_prefix, group, entry.key));
    s_.failpoints.hit("replay_after_claim_forgotten");
    s_.producer.produce(out, kKafkaTimeout);
    s_.producer.flush(kKafkaTimeout);
    s_.failpoints.hit("replay_after_produce");
    const std::string produced_to = out.topic + "/" + std::to_string(out.partition.value_or(0));
    mark_replay_produced(s_.postgres, group, entry.key, produced_to);
    return {entry.key, ReplayResult::Status::replayed, "from " + source, produced_to};
}

}  // namespace exo
