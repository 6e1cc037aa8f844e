#pragma once
// exo's own headers on records it writes (a dead letter: protocol/dead_letter.cpp;
// a replayed copy: ops/replayed_record.cpp), and how they are told apart from
// the headers a record arrived with. Whoever produces to an input topic can put
// any header on a record, `exo-consumer-group` too, and a dead letter copies the
// record's headers: so the copies of `exo-*` headers are renamed on the letter
// (kept for the operator, never read as exo's), and readers take the last header
// of a name, the one exo appended after the copies (letters written before the
// renaming carry the record's copies first). Pure.
#include <string>
#include <string_view>

#include <exo/record.hpp>

namespace exo {

// On every replayed record: "<topic>/<partition>/<offset>" of the record it
// replays. For people and tools; the daemon treats the record like any other.
// Kept as received on a dead letter: it says the letter is of a replayed copy.
inline constexpr const char* kReplayedFromHeader = "exo-replayed-from";

// A record's own `exo-*` header (other than exo-replayed-from) is on its dead
// letter under this prefix: "exo-error" as "exo-received-exo-error".
inline constexpr std::string_view kReceivedHeaderPrefix = "exo-received-";

// The name a record's header `name` has on its dead letter.
inline std::string dead_letter_header_name(std::string_view name) {
    if (!name.starts_with("exo-") || name == kReplayedFromHeader) return std::string(name);
    return std::string(kReceivedHeaderPrefix) + std::string(name);
}

// The inverse, for a replay that re-produces the letter's record: the name the
// header had on the record. exo appends no header under the prefix, so every
// such header of a letter is a renamed copy.
inline std::string replayed_header_name(std::string_view name) {
    if (name.starts_with(kReceivedHeaderPrefix)) name.remove_prefix(kReceivedHeaderPrefix.size());
    return std::string(name);
}

// What a dead letter says in place of bytes it left out (a key or header too large
// for the letter to fit, protocol/dead_letter.hpp): "<size> bytes sha256:<hex>", so a
// reader can check a candidate (replay: the record at the letter's coordinates).
inline std::string omitted_bytes_text(std::size_t size, std::string_view sha256_hex) {
    return std::to_string(size) + " bytes sha256:" + std::string(sha256_hex);
}

// The last header named `name` of a record exo wrote, or nullptr.
inline const RecordHeader* exo_header(const Record& r, std::string_view name) {
    for (auto h = r.headers.rbegin(); h != r.headers.rend(); ++h)
        if (h->name == name) return &*h;
    return nullptr;
}

}  // namespace exo
