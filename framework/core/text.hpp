#pragma once
// Text that crosses into PostgreSQL and Redis. Pure: no I/O.
//
// PostgreSQL `text` refuses invalid UTF-8 (SQLSTATE 22021) and, through libpq's
// C-string parameters, ends a value at its first NUL byte. Its UTF-8 check is
// the strict one of RFC 3629: no overlong forms (C0 80), no UTF-16 surrogates
// (ED A0 80), nothing above U+10FFFF (F4 90.., F5..FF). A value that passes a
// looser check is discovered only when a statement fails, which is too late for
// a value exo must store to finish the record (a dead letter's own row). So
// every value is checked here, before it is used, with the server's rule.
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace exo {

// True if `s` is UTF-8 PostgreSQL accepts (RFC 3629) and holds no NUL byte.
bool is_postgres_text(std::string_view s) noexcept;

// An idempotency key or sequence entity as stored in PostgreSQL and Redis. The
// mapping is injective, so two different inputs never share a stored key:
//   - PostgreSQL text that does not start with "binary:" is kept as it is;
//   - anything else (raw bytes such as a 16-byte UUID header, a NUL, invalid or
//     overlong UTF-8, and a literal value that itself starts with "binary:") is
//     stored as "binary:" + lowercase hex of every byte.
std::string stored_key(std::string_view value);

// The longest stored key (after stored_key()) exo accepts, in bytes. The
// dedup row's primary key is (consumer_group, idempotency_key) in a btree,
// whose entries must fit a third of an 8 KiB page (~2,700 bytes): a longer key
// fails its INSERT with 54000. 1 KiB leaves room for the group and is far above
// any real event id or entity id; a longer one is almost always a key pointer
// aimed at the wrong field, so it is refused as bad input, not shortened.
inline constexpr std::size_t kMaxStoredKeyBytes = 1024;
// The longest consumer group id, in bytes: it shares the dedup index entry with
// the key (1,024 + 512 + row overhead stays well inside the ~2,700-byte limit).
inline constexpr std::size_t kMaxGroupIdBytes = 512;

// Lowercase hex of every byte (PostgreSQL's encode(x, 'hex')), and back:
// bytes_of_hex takes either case and answers nullopt for anything that is not
// an even number of hex digits.
std::string hex_bytes(std::string_view bytes);
std::optional<std::string> bytes_of_hex(std::string_view hex);

// Error text (an exception's what(), a DLQ reason) made storable: invalid UTF-8
// and NUL bytes become U+FFFD, and the result is cut to at most `max_bytes` on
// a character boundary, marked with "...". Lossy on purpose: it is read by
// people, never used as a key.
std::string printable_text(std::string_view s, std::size_t max_bytes = 2048);

// `s` made safe for one line of a log or a terminal, the one escaping of every
// place where a record's bytes (a key, an exception quoting one) reach a log line
// or an operator's screen: printable_text(s, max_bytes), then a backslash as
// "\\", '\n' '\r' '\t' as "\n" "\r" "\t", every other C0 control, DEL and C1
// control (ESC and CSI start terminal sequences) and the Unicode line and
// paragraph separators and bidirectional marks and overrides (which reorder what
// an operator reads) as a backslash, 'u' and four hex digits. These are JSON's escapes: a JSON
// string of it needs only its quotes escaped (logging/log_formatters.hpp json_string). Injective on
// valid UTF-8 without NUL: different texts stay different.
std::string one_line_text(std::string_view s,
                          std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

}  // namespace exo
