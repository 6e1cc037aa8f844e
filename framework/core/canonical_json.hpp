#pragma once
// The canonical JSON of a payload, hashed into an idempotency key by bindings
// with `key: { hash: ... }` (core/key_derivation.hpp). Pure: no I/O.
//
// The form (docs/design.md, "Payload-derived keys"), byte for byte what Python's
//   json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
// writes for the parsed payload, encoded as UTF-8, except for numbers:
// - object members sorted by name, compared as UTF-8 bytes (= Unicode code
//   points, Python's order; RFC 8785 compares UTF-16 code units, which differs
//   only between U+E000..U+FFFF and characters above U+FFFF);
// - no whitespace outside strings;
// - strings in UTF-8 as parsed (escapes in the payload resolved), written with
//   \" \\ \b \f \n \r \t and \u00xx (lowercase) for the other controls below
//   U+0020; everything else, U+007F and non-ASCII included, as raw UTF-8
//   (RFC 8785's rule too);
// - integers that fit 64 bits in decimal ("-0" is 0); every other number
//   exactly as written in the payload ("1.0" stays "1.0", "1E2" stays "1E2").
//   RFC 8785 and Python rewrite such numbers (to "1"/"1.0" and "100"/"100.0"):
//   exo does not reformat a float, so two producers writing one amount in two
//   spellings get two keys, but an id above 2^53 is never rounded into another's;
// - a payload with a member name twice in one object is refused (Python keeps
//   the last, RFC 8785 refuses): the event it stands for is ambiguous.
//
// `fields` hashes an object of the listed pointers' values keyed by the pointer
// text ({"/amount":..,"/orderId":..}, sorted like any object): listing the
// fields in another order keeps every key. `exclude` drops the values at the
// listed pointers (each resolved against the payload as received) wherever they
// exist; an excluded pointer absent from a payload is not an error.
#include <cstddef>
#include <string>
#include <string_view>

#include "core/key_source.hpp"

namespace exo {

// Deeper nesting is refused: the canonical form is built recursively.
inline constexpr std::size_t kMaxCanonicalDepth = 256;

// The canonical JSON text `spec` selects from `payload`. Pure and thread-safe.
// Throws PermanentError (the record is dead-lettered with its message) if the
// payload is not JSON (the reason core/payload.hpp gives), has a member name
// twice in one object, nests deeper than kMaxCanonicalDepth, lacks a pointer
// listed in `fields`, or if a listed pointer is not a JSON pointer.
std::string canonical_json(std::string_view payload, const HashKeySpec& spec);

}  // namespace exo
