#include "ops/replay.hpp"

#include "core/key_derivation.hpp"
#include "core/payload.hpp"
#include "ops/claim_view.hpp"
#include "ops/dedup_queries.hpp"
#include "ops/replayed_record.hpp"
#include "ops/unsettled_letters.hpp"
#include "pg/dead_letter_record.hpp"
#include "redis/claim_store.hpp"

namespace exo {
namespace {

constexpr std::chrono::seconds kKafkaTimeout{30};

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

const BindingConfig& binding_of(const Config& config, const std::string& topic) {
    for (const auto& b : config.bindings)
        if (b.topic == topic) return b;
    throw UsageError("topic '" + topic +
                     "' has no binding in this config: replay with the config of the daemon "
                     "that consumes it");
}

// A re-produced record has new coordinates, so a `coordinates` key would change.
void refuse_coordinates(const BindingConfig& binding) {
    if (binding.key.kind == KeySourceKind::coordinates)
        throw UsageError("the binding of topic '" + binding.topic +
                         "' derives keys from the record's coordinates, which a re-produced "
                         "record does not keep: exactly once could not hold, so exo does not "
                         "replay it; nothing was changed");
}

// The key the daemon will derive from the replayed record must be the dead
// letter's: only then does the dedup row keep the replay exactly once.
void check_same_key(const BindingConfig& binding, const OutgoingRecord& out,
                    const std::string& key) {
    refuse_coordinates(binding);
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

std::string DeadLetterReplayer::derived_key(const BindingConfig& binding,
                                            const OutgoingRecord& out) const {
    refuse_coordinates(binding);
    Record consumed = as_consumed(out);
    JsonPayload payload(consumed.value);
    try {
        return derive_idempotency_key(binding.key, consumed, payload);
    } catch (const PermanentError& e) {
        throw ReplayRefused(
            std::string("its record still derives no idempotency key under the binding of "
                        "topic '") +
            binding.topic + "' (" + e.what() +
            "): the daemon would dead-letter it again at once, and without a key nothing keeps "
            "it exactly once. Nothing was changed. Fix the binding's key and replay it (exactly "
            "once under the key it then derives), or re-produce the event with a key");
    }
}

OutgoingRecord DeadLetterReplayer::find_record(const DeadLetterEntry& entry,
                                               const BindingConfig& binding, std::string& source) {
    const OriginalCoordinates at{entry.topic, entry.partition, entry.offset};
    const Record* found = nullptr;
    for (const auto& r : s_.letters.records(binding.dead_letter_topic))
        // A keyless letter is its record's, whatever key the record derives now.
        if (is_dead_letter_of(r, s_.config.kafka.group_id, entry.key, at) ||
            is_dead_letter_of(r, s_.config.kafka.group_id, "", at))
            found = &r;  // the latest copy
    if (found != nullptr) verify_letter(*found, entry);
    if (found != nullptr && !value_omitted(*found)) {
        source = "its dead letter " +
                 to_text({found->topic.value, found->partition.value, found->offset.value});
        return replay_of_dead_letter(*found, at);
    }
    if (auto original = s_.reader.read_at(at.topic, at.partition, at.offset, kKafkaTimeout)) {
        // A letter too large to fit left the key out too: the record read back must be its.
        if (found != nullptr && !omitted_key_matches(*found, *original))
            throw ReplayRefused("the record at " + to_text(at) +
                                " does not have the key its dead letter left out (exo-key-omitted "
                                "gives its size and SHA-256): it is not the dead-lettered record. "
                                "Nothing was changed; re-produce the event by hand with its key");
        source = "the original record " + to_text(at);
        return replay_of_original(*original);
    }
    const std::string who = entry.key.empty() ? "the keyless record " + to_text(at)
                                              : "the record of key '" + entry.key + "'";
    throw ReplaySourceGone(
        who + " is gone: " +
        (found != nullptr ? "its dead letter in '" + binding.dead_letter_topic +
                                "' was sent without its value (too large)"
                          : "no dead letter of it is left in '" + binding.dead_letter_topic + "'") +
        ", and Kafka no longer keeps " + to_text(at) +
        " (retention or compaction). Nothing was changed; re-produce the event by hand with its "
        "key, then see docs/operations.md");
}

void DeadLetterReplayer::verify_letter(const Record& letter, const DeadLetterEntry& entry) {
    const std::string digest = dead_letter_digest(letter.key, letter.value, letter.headers);
    const auto recorded = recorded_dead_letter_digest(s_.postgres, s_.config.kafka.group_id,
                                                      entry.topic, entry.partition, entry.offset);
    const auto check = check_letter(recorded, digest);
    if (check == LetterCheck::verified) return;
    if (check == LetterCheck::unrecorded && s_.trust_unverified) {
        s_.warn(unverified_letter_text(entry.key, {entry.topic, entry.partition, entry.offset},
                                       letter, recorded, digest) +
                "; replayed anyway (--trust-unverified)");
        return;
    }
    throw ReplayUnverified(unverified_letter_text(entry.key,
                                                  {entry.topic, entry.partition, entry.offset},
                                                  letter, recorded, digest) +
                           ". Nothing was changed");
}

std::optional<SequenceValue> DeadLetterReplayer::sequence_of(const DeadLetterEntry& entry) {
    const BindingConfig& binding = binding_of(s_.config, entry.topic);
    if (!binding.sequence) return std::nullopt;
    std::string source;
    OutgoingRecord out = find_record(entry, binding, source);
    JsonPayload payload(out.value);
    return extract_sequence(*binding.sequence, payload);
}

ReplayResult DeadLetterReplayer::replay(const DeadLetterEntry& entry, bool dry_run) {
    const std::string& group = s_.config.kafka.group_id;
    const BindingConfig& binding = binding_of(s_.config, entry.topic);
    std::string source;
    OutgoingRecord out = find_record(entry, binding, source);
    std::string key = entry.key;
    const bool without_row =
        entry.state == DeadLetterState::no_dedup_row || entry.state == DeadLetterState::no_key;
    if (without_row && beyond_retention(entry, s_.config.postgres.dedup_retention, now_ms()))
        throw ReplayRefused(
            "dead-lettered at " + entry.dead_lettered_at +
            ", longer ago than postgres.dedup_retention_days: its key may have been applied "
            "since and its dedup row pruned, so exo cannot tell whether a replay would apply it "
            "twice. Nothing was changed; check the effects and re-produce the event by hand if "
            "it was never applied");
    if (entry.state == DeadLetterState::no_key) {
        key = derived_key(binding, out);
        source += " (its record now derives key '" + key + "')";
        if (find_dedup_row(s_.postgres, group, key) || find_replay_ticket(s_.postgres, group, key))
            return {key, ReplayResult::Status::skipped,
                    "the keyless record " +
                        to_text(OriginalCoordinates{entry.topic, entry.partition, entry.offset}) +
                        " now derives key '" + key +
                        "', which the group already has a dedup row or replay for: a replayed "
                        "copy would be a duplicate; nothing was produced (see exo inspect)",
                    ""};
    }
    check_same_key(binding, out, key);
    if (dry_run) return {key, ReplayResult::Status::would_replay, "from " + source, ""};

    switch (entry.state) {
        case DeadLetterState::dead_lettered:
            if (!open_replay_ticket(s_.postgres, group, key))
                return {key, ReplayResult::Status::skipped,
                        "no longer DEAD_LETTERED (replayed meanwhile?): see exo inspect", ""};
            s_.failpoints.hit("replay_after_ticket");
            break;
        case DeadLetterState::no_dedup_row:
        case DeadLetterState::no_key:
            if (!open_letter_ticket(s_.postgres, group, key, entry))
                return {key, ReplayResult::Status::skipped,
                        "decided or replayed meanwhile (a dedup row or a ticket for this dead "
                        "letter appeared): see exo inspect",
                        ""};
            s_.failpoints.hit("replay_after_ticket");
            break;
        case DeadLetterState::replay_pending:
        case DeadLetterState::replay_sent:
            break;  // the ticket exists: resume at step 2
    }
    if (s_.redis != nullptr)
        forget_claim(*s_.redis,
                     claim_key(key_layout(*s_.redis), s_.config.redis.key_prefix, group, key));
    s_.failpoints.hit("replay_after_claim_forgotten");
    s_.producer.produce(out, kKafkaTimeout);
    s_.producer.flush(kKafkaTimeout);
    s_.failpoints.hit("replay_after_produce");
    const std::string produced_to = out.topic + "/" + std::to_string(out.partition.value_or(0));
    mark_replay_produced(s_.postgres, group, key, produced_to);
    return {key, ReplayResult::Status::replayed, "from " + source, produced_to};
}

}  // namespace exo
