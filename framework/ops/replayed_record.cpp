#include "ops/replayed_record.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/text.hpp"
#include "pg/migrations.hpp"  // sha256_hex

namespace exo {
namespace {

// Every header make_dead_letter() appends (protocol/dead_letter.cpp), and ours.
constexpr std::array<std::string_view, 13> kExoHeaders{
    "exo-error",           "exo-attempts",       "exo-original-topic",  "exo-original-partition",
    "exo-original-offset", "exo-consumer-group", "exo-idempotency-key", "exo-value-omitted",
    "exo-key-omitted",     "exo-header-omitted", "exo-headers-omitted", "exo-traceparent",
    kReplayedFromHeader};

bool is_exo_header(const RecordHeader& h) {
    return std::find(kExoHeaders.begin(), kExoHeaders.end(), h.name) != kExoHeaders.end();
}

std::string header_text(const Record& r, std::string_view name) {
    const RecordHeader* h = exo_header(r, name);
    return h != nullptr && h->value ? *h->value : std::string();
}

// `renamed`: `from` is a dead letter, whose record's own exo-* headers were
// renamed when it was written.
OutgoingRecord replay(const Record& from, const OriginalCoordinates& at, bool renamed) {
    OutgoingRecord out;
    out.topic = at.topic;
    out.partition = at.partition;
    out.key = from.key;
    out.value = from.value;
    for (const auto& h : from.headers) {
        if (is_exo_header(h)) continue;
        out.headers.push_back({renamed ? replayed_header_name(h.name) : h.name, h.value});
    }
    out.headers.push_back({kReplayedFromHeader, to_text(at)});
    return out;
}

}  // namespace

std::string to_text(const OriginalCoordinates& at) {
    return at.topic + "/" + std::to_string(at.partition) + "/" + std::to_string(at.offset);
}

bool is_dead_letter_of(const Record& dead_letter, const std::string& group, const std::string& key,
                       const OriginalCoordinates& at) {
    // A letter naming no group (written before exo named it) may be another
    // group's: the dead-letter topic may be shared.
    return exo_header(dead_letter, "exo-consumer-group") != nullptr &&
           header_text(dead_letter, "exo-consumer-group") == group &&
           header_text(dead_letter, "exo-idempotency-key") == key &&
           header_text(dead_letter, "exo-original-topic") == at.topic &&
           header_text(dead_letter, "exo-original-partition") == std::to_string(at.partition) &&
           header_text(dead_letter, "exo-original-offset") == std::to_string(at.offset);
}

bool value_omitted(const Record& dead_letter) {
    return exo_header(dead_letter, "exo-value-omitted") != nullptr;
}

bool omitted_key_matches(const Record& dead_letter, const Record& original) {
    const RecordHeader* h = exo_header(dead_letter, "exo-key-omitted");
    if (h == nullptr) return true;
    const std::string key = original.key.value_or("");
    return original.key && h->value && *h->value == omitted_bytes_text(key.size(), sha256_hex(key));
}

LetterCheck check_letter(const std::optional<std::string>& recorded, const std::string& digest) {
    if (!recorded) return LetterCheck::unrecorded;
    return *recorded == digest ? LetterCheck::verified : LetterCheck::forged;
}

std::string unverified_letter_text(const std::string& key, const OriginalCoordinates& at,
                                   const Record& letter, const std::optional<std::string>& recorded,
                                   const std::string& digest) {
    const std::string who = key.empty()
                                ? "the keyless record " + to_text(at)
                                : "key '" + one_line_text(key, 256) + "' (" + to_text(at) + ")";
    const std::string where =
        to_text({letter.topic.value, letter.partition.value, letter.offset.value});
    if (!recorded)
        return "the dead letter of " + who + " at " + where +
               " is not one exo recorded writing (no digest of it in exo_dead_letters: "
               "produced by another client, written before exo recorded digests, or longer "
               "than postgres.dedup_retention_days ago; --trust-unverified replays such a "
               "letter after a warning); its key, value and headers have SHA-256 " +
               digest;
    return "the dead letter of " + who + " at " + where +
           " is not the one exo wrote: exo recorded SHA-256 " + *recorded +
           " of its key, value and headers, the letter has " + digest +
           " (replaced or produced by another client)";
}

OutgoingRecord replay_of_dead_letter(const Record& dead_letter, const OriginalCoordinates& at) {
    return replay(dead_letter, at, true);
}

OutgoingRecord replay_of_original(const Record& original) {
    return replay(original, {original.topic.value, original.partition.value, original.offset.value},
                  false);
}

Record as_consumed(const OutgoingRecord& record) {
    Record r;
    r.topic = Topic{record.topic};
    r.partition = Partition{record.partition.value_or(0)};
    r.offset = Offset{-1};
    r.key = record.key;
    r.value = record.value;
    r.headers = record.headers;
    return r;
}

}  // namespace exo
