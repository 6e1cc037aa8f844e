#include "ops/unsettled_letters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <tuple>

#include "core/exo_headers.hpp"
#include "core/text.hpp"

namespace exo {
namespace {

std::optional<std::string> header_value(const Record& r, std::string_view name) {
    const RecordHeader* h = exo_header(r, name);  // exo's: see core/exo_headers.hpp
    if (h == nullptr || !h->value) return std::nullopt;
    return h->value;
}

std::optional<std::int64_t> integer(const std::optional<std::string>& text) {
    if (!text || text->empty() || text->size() > 18 ||
        text->find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return std::stoll(*text);
}

// Copies of one letter and letters of one key: the latest is used, as replay does.
bool later(const LetterView& a, const LetterView& b) {
    return std::tie(a.timestamp_ms, a.in_dlq.topic, a.in_dlq.partition, a.in_dlq.offset) >
           std::tie(b.timestamp_ms, b.in_dlq.topic, b.in_dlq.partition, b.in_dlq.offset);
}

DeadLetterEntry entry_of(const LetterView& l, DeadLetterState state) {
    return {l.key.value_or(""),
            state,
            l.at.topic,
            l.at.partition,
            l.at.offset,
            l.reason,
            l.timestamp_ms >= 0 ? iso_utc(l.timestamp_ms) : std::string("-"),
            std::nullopt};
}

bool passes(const DeadLetterEntry& e, const DeadLetterSelection& s, std::int64_t now_ms) {
    if (s.topic && e.topic != *s.topic) return false;
    if (s.partition && e.partition != *s.partition) return false;
    if (s.offset && e.offset != *s.offset) return false;
    // ISO 8601 texts of one form sort as their times do; "-" (unknown) sorts first.
    if (s.since && e.dead_lettered_at < iso_utc(now_ms - s.since->count())) return false;
    return true;
}

}  // namespace

std::string iso_utc(std::int64_t epoch_ms) {
    const std::int64_t seconds = epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000;
    const auto ms = static_cast<int>(epoch_ms - seconds * 1000);
    const auto t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

bool beyond_retention(const DeadLetterEntry& letter, std::chrono::hours retention,
                      std::int64_t now_ms) {
    const auto kept = std::chrono::duration_cast<std::chrono::milliseconds>(retention).count();
    return letter.dead_lettered_at < iso_utc(now_ms - kept);
}

std::optional<LetterView> read_letter(const Record& r) {
    auto topic = header_value(r, "exo-original-topic");
    auto partition = integer(header_value(r, "exo-original-partition"));
    auto offset = integer(header_value(r, "exo-original-offset"));
    if (!topic || topic->empty() || !partition || !offset || *partition > 1'000'000)
        return std::nullopt;
    LetterView l;
    l.key = header_value(r, "exo-idempotency-key");
    // A key exo could not have stored is no key of the group's.
    if (l.key &&
        (l.key->empty() || l.key->size() > kMaxStoredKeyBytes || !is_postgres_text(*l.key)))
        l.key.reset();
    l.at = {*topic, static_cast<int>(*partition), *offset};
    l.group = header_value(r, "exo-consumer-group");
    l.replayed_from = header_value(r, kReplayedFromHeader);
    l.reason = header_value(r, "exo-error").value_or("");
    l.timestamp_ms = r.timestamp_ms;
    l.in_dlq = {r.topic.value, r.partition.value, r.offset.value};
    return l;
}

std::vector<LetterView> letters_of_group(std::vector<LetterView> letters,
                                         const std::string& group) {
    std::erase_if(letters, [&](const LetterView& l) { return !l.group || *l.group != group; });
    return letters;
}

std::vector<DeadLetterEntry> unsettled_letters(const std::vector<LetterView>& letters,
                                               const LetterStates& states) {
    // The letter each key (or keyless record) is listed by.
    std::map<std::string, const LetterView*> keyed, keyless;
    for (const auto& l : letters) {
        if (!l.key) {
            const std::string at = to_text(l.at);
            if (states.ticketed.contains(at)) continue;
            auto& chosen = keyless[at];
            if (chosen == nullptr || later(l, *chosen)) chosen = &l;
            continue;
        }
        auto state = states.keys.find(*l.key);
        LetterStates::Key none;
        const auto& known = state == states.keys.end() ? none : state->second;
        if (known.outcome) continue;
        // With a ticket, only the dead letter of the ticket's own replayed copy
        // says anything new: every older letter is what the ticket replays.
        if (known.ticket && l.replayed_from != to_text(*known.ticket)) continue;
        auto& chosen = keyed[*l.key];
        if (chosen == nullptr || later(l, *chosen)) chosen = &l;
    }
    std::vector<DeadLetterEntry> out;
    out.reserve(keyed.size());
    for (const auto& [key, l] : keyed) out.push_back(entry_of(*l, DeadLetterState::no_dedup_row));
    for (const auto& [at, l] : keyless) out.push_back(entry_of(*l, DeadLetterState::no_key));
    return out;
}

std::vector<DeadLetterEntry> merge_entries(std::vector<DeadLetterEntry> from_postgres,
                                           std::vector<DeadLetterEntry> from_letters,
                                           const DeadLetterSelection& selection,
                                           std::int64_t now_ms) {
    std::set<std::string> superseded;
    for (const auto& e : from_letters)
        if (!e.key.empty()) superseded.insert(e.key);
    std::vector<DeadLetterEntry> out;
    for (auto& e : from_postgres)
        if (!superseded.contains(e.key)) out.push_back(std::move(e));
    for (auto& e : from_letters)
        if (passes(e, selection, now_ms)) out.push_back(std::move(e));
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::tie(a.dead_lettered_at, a.key) < std::tie(b.dead_lettered_at, b.key);
    });
    return out;
}

}  // namespace exo
